/**
 * The pieces the status page and the queue page are both made of: badges, times, tables, sections.
 * Every value goes through `markup` (escaped).
 */
import { markup, type Html, type HtmlValue } from './html.ts';
import { relativeText, utcText } from './time-text.ts';

export type Tone = 'ok' | 'warn' | 'bad';

/** Outcomes of deliveries and calls, by how much they need a look. */
const TONES: Record<string, Tone> = {
  accepted: 'ok',
  done: 'ok',
  duplicate: 'ok',
  ignored: 'warn',
  skipped: 'warn',
  'dry-run': 'warn',
  unauthorized: 'bad',
  bad_request: 'bad',
  too_large: 'bad',
  inbox_full: 'bad',
  overloaded: 'bad',
  error: 'bad',
  failed: 'bad',
  ambiguous: 'bad',
  withdrawn: 'warn',
};

export function badge(text: string, tone: Tone | undefined = TONES[text]): Html {
  return markup`<span class="badge ${tone ?? ''}">${text}</span>`;
}

export function when(ms: number | undefined, now: number): Html {
  if (ms === undefined) return markup`<span class="muted">not yet</span>`;
  const iso = Number.isFinite(ms) ? new Date(ms).toISOString() : '';
  return markup`<time datetime="${iso}">${utcText(ms)}</time> <small>(${relativeText(ms, now)})</small>`;
}

export interface Column<T> {
  label: string;
  cell: (row: T) => HtmlValue;
}

/** A table whose cells carry their column's name, shown beside each value on narrow screens. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string): Html {
  if (rows.length === 0) return markup`<p class="muted">${empty}</p>`;
  const head = columns.map((column) => markup`<th scope="col">${column.label}</th>`);
  const body = rows.map(
    (row) =>
      markup`<tr>${columns.map((column) => markup`<td data-label="${column.label}">${column.cell(row)}</td>`)}</tr>\n`,
  );
  return markup`<table>\n<thead><tr>${head}</tr></thead>\n<tbody>\n${body}</tbody>\n</table>\n`;
}

export function section(id: string, title: string, count: number | undefined, body: HtmlValue): Html {
  const heading = count === undefined ? title : `${title} (${count})`;
  return markup`<section id="${id}">\n<h2>${heading}</h2>\n${body}</section>\n`;
}

/** A link to explain's answer (relative: explain is served beside the page). */
export function explainAnchor(href: string | undefined, text: string): Html | '' {
  return href === undefined ? '' : markup`<a href="${href}">${text}</a>`;
}
