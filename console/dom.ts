/**
 * The console's one way to make elements. Data is only ever set as text (text nodes,
 * textContent, properties): nothing here parses HTML, so a market title or a wallet name holding
 * markup shows as the characters it is (docs/console.md, Safety).
 */
import { format } from "./format";

export { format };

export type Child = Node | string | number | null | undefined | false;

interface Props {
  className?: string;
  id?: string;
  href?: string;
  type?: string;
  name?: string;
  value?: string;
  placeholder?: string;
  title?: string;
  htmlFor?: string;
  disabled?: boolean;
  required?: boolean;
  autocomplete?: AutoFill;
  /** aria-*, role, scope and other plain attributes, set with setAttribute. */
  attrs?: Record<string, string>;
  data?: Record<string, string>;
  on?: { [E in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[E]) => void };
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  const { attrs, data, on, ...plain } = props;
  for (const [key, value] of Object.entries(plain)) {
    if (value !== undefined) (el as unknown as Record<string, unknown>)[key] = value;
  }
  for (const [key, value] of Object.entries(attrs ?? {})) el.setAttribute(key, value);
  for (const [key, value] of Object.entries(data ?? {})) el.dataset[key] = value;
  for (const [event, handler] of Object.entries(on ?? {})) {
    el.addEventListener(event, handler as EventListener);
  }
  append(el, ...children);
  return el;
}

export function append(el: Element, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "number" ? String(child) : child);
  }
}

/** Replaces an element's content (text and nodes only). */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** A hash route link (the key never goes in a URL: routes hold only public identifiers). */
export function link(route: string, ...children: Child[]): HTMLAnchorElement {
  return h("a", { href: `#/${route}` }, ...children);
}

export function walletLink(address: string, name?: string | null): HTMLAnchorElement {
  return h(
    "a",
    { href: `#/wallet/${address}`, title: address, data: { wallet: address } },
    name ? `${name} (${format.address(address)})` : format.address(address),
  );
}

export function marketLink(slug: string, title?: string | null): HTMLAnchorElement {
  return h(
    "a",
    { href: `#/market/${encodeURIComponent(slug)}`, data: { market: slug } },
    title ?? slug,
  );
}

export type Column<T> = CellColumn<T> | FigureColumn<T>;

interface CellColumn<T> {
  label: string;
  cell: (row: T) => Child;
  /** A value to sort on; a column without one is not sortable. */
  sort?: (row: T) => number | string | null;
  numeric?: boolean;
}

/** A number column: the cell shows the row's figure through `show` (a format); rows sort on it. */
interface FigureColumn<T> {
  label: string;
  figure: (row: T) => number | null;
  show: (value: number | null) => Child;
}

const asCells = <T>(c: Column<T>): CellColumn<T> =>
  "figure" in c
    ? { label: c.label, cell: (row) => c.show(c.figure(row)), sort: c.figure, numeric: true }
    : c;

/**
 * A table whose sortable headers are buttons (keyboard-usable); sorting reorders the rows
 * shown. `caption` names it for screen readers.
 */
export function table<T>(caption: string, given: Column<T>[], rows: T[]): HTMLElement {
  const columns = given.map(asCells);
  const body = h("tbody");
  let sortBy = -1;
  let ascending = false;
  const headers: HTMLTableCellElement[] = [];
  const draw = () => {
    const shown = [...rows];
    const column = columns[sortBy];
    if (column?.sort) {
      const key = column.sort;
      shown.sort((a, b) => {
        const x = key(a);
        const y = key(b);
        if (x === y) return 0;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * (ascending ? 1 : -1);
      });
    }
    replace(
      body,
      ...shown.map((row) =>
        h(
          "tr",
          {},
          ...columns.map((c) => h("td", { className: c.numeric ? "num" : "" }, c.cell(row))),
        ),
      ),
    );
    headers.forEach((th, i) => {
      th.setAttribute(
        "aria-sort",
        i === sortBy ? (ascending ? "ascending" : "descending") : "none",
      );
    });
  };
  const head = columns.map((c, i) => {
    const th = h("th", { className: c.numeric ? "num" : "", attrs: { scope: "col" } });
    if (c.sort) {
      append(
        th,
        h(
          "button",
          {
            type: "button",
            className: "sort",
            on: {
              click: () => {
                ascending = sortBy === i ? !ascending : false;
                sortBy = i;
                draw();
              },
            },
          },
          c.label,
        ),
      );
    } else {
      append(th, c.label);
    }
    headers.push(th);
    return th;
  });
  draw();
  if (rows.length === 0) {
    append(
      body,
      h("tr", {}, h("td", { attrs: { colspan: String(columns.length) } }, "Nothing here.")),
    );
  }
  return h(
    "div",
    { className: "table-wrap" },
    h("table", {}, h("caption", {}, caption), h("thead", {}, h("tr", {}, ...head)), body),
  );
}

/** A definition list of figures: [label, value] pairs. */
export function facts(pairs: [string, Child][]): HTMLDListElement {
  return h(
    "dl",
    { className: "facts" },
    ...pairs.flatMap(([label, value]) => [
      h("dt", {}, label),
      h("dd", { data: { fact: label } }, value),
    ]),
  );
}

export function section(title: string, ...children: Child[]): HTMLElement {
  return h("section", {}, h("h2", {}, title), ...children);
}
