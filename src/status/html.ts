/**
 * HTML for the status page, escaped by construction: `markup` escapes every interpolated value
 * unless it is already an `Html` fragment (the result of another `markup` call), so a value can only
 * reach the page as text. Titles, rule names, error messages and comment bodies all come from users.
 *
 * The tag is not named `html` on purpose: prettier reformats templates tagged `html`, which would
 * add whitespace inside `<pre>` (the explanations) and `<style>` (whose hash the CSP pins).
 */

/** A fragment of markup that is safe to insert as is. */
export class Html {
  readonly #markup: string;
  constructor(markup: string) {
    this.#markup = markup;
  }
  toString(): string {
    return this.#markup;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for element content and quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char] ?? char);
}

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.toString();
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function markup(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let markup = strings[0] ?? '';
  values.forEach((value, index) => {
    markup += render(value) + (strings[index + 1] ?? '');
  });
  return new Html(markup);
}

/** Trusted markup written in this folder (the stylesheet); never pass data here. */
export function trusted(markup: string): Html {
  return new Html(markup);
}
