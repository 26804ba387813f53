/**
 * The standard normal tail, accurate in relative terms far out (needed for tiny p-values and for
 * the saddlepoint approximation), with a log form that never underflows.
 */

const LN_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);

/** Below this z the series for Φ(z) − ½ is used; above it the continued fraction for the Mills ratio. */
const CONTINUED_FRACTION_FROM = 3;
const CONTINUED_FRACTION_TERMS = 100;

export function logNormalDensity(z: number): number {
  return -0.5 * z * z - LN_SQRT_2PI;
}

export function normalDensity(z: number): number {
  return Math.exp(logNormalDensity(z));
}

/** Φ(z) − ½ for 0 ≤ z < 3: φ(z)·(z + z³/3 + z⁵/(3·5) + …), every term positive. */
function centralMass(z: number): number {
  let term = z;
  let sum = z;
  for (let k = 3; term > sum * 1e-17; k += 2) {
    term *= (z * z) / k;
    sum += term;
  }
  return normalDensity(z) * sum;
}

/** Φc(z)/φ(z) for z ≥ 3, by the continued fraction 1/(z + 1/(z + 2/(z + 3/(z + …)))). */
export function millsRatio(z: number): number {
  let t = z;
  for (let k = CONTINUED_FRACTION_TERMS; k >= 1; k--) t = z + k / t;
  return 1 / t;
}

/** P(Z ≥ z) for a standard normal Z. */
export function upperNormalTail(z: number): number {
  if (Number.isNaN(z)) return Number.NaN;
  if (z < 0) return 1 - upperNormalTail(-z);
  if (z < CONTINUED_FRACTION_FROM) return 0.5 - centralMass(z);
  return normalDensity(z) * millsRatio(z);
}

/** ln P(Z ≥ z), finite for every finite z (P(Z ≥ 40) ≈ e^-804.6 is no problem). */
export function logUpperNormalTail(z: number): number {
  if (z < 0) return Math.log1p(-upperNormalTail(-z));
  if (z < CONTINUED_FRACTION_FROM) return Math.log(upperNormalTail(z));
  return logNormalDensity(z) + Math.log(millsRatio(z));
}
