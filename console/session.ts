/**
 * The API key lives in sessionStorage only: gone when the tab closes, never in a URL (routes are
 * hash fragments of public identifiers), never logged.
 */
const KEY = "smartmoney.console.key";

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  save: (key: string) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};
