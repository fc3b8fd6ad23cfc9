/**
 * The status page's only stylesheet, inline (no build step, no asset route). Its hash goes into the
 * Content-Security-Policy, so the page runs no script and loads nothing, even if a value slipped
 * past escaping. On narrow screens tables turn into one labelled block per row.
 */
import { createHash } from 'node:crypto';

export const STATUS_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #59636e; --line: #d1d9e0; --bg: #fff;
  --card: #f6f8fa; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --line: #3d444d;
  --bg: #0d1117; --card: #151b23; --ok: #3fb950; --warn: #d29922; --bad: #f85149; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 72rem; padding: 1rem; font: 15px/1.45 system-ui, sans-serif;
  color: var(--fg); background: var(--bg); }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
h2 { font-size: 1.15rem; margin: 1.75rem 0 .5rem; padding-bottom: .25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 0; overflow-wrap: anywhere; }
a { color: inherit; }
p { margin: .4rem 0; }
nav { display: flex; flex-wrap: wrap; gap: .35rem .9rem; margin: .5rem 0; }
code, pre, .mono { overflow-wrap: anywhere; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--card); padding: .6rem;
  border-radius: 6px; margin: .4rem 0 0; }
.muted, small { color: var(--muted); }
.alert { border-left: 4px solid var(--bad); background: var(--card); padding: .5rem .75rem; margin: .5rem 0; }
.alert.warn { border-color: var(--warn); }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 1rem; border: 1px solid currentColor;
  font-size: .85em; white-space: nowrap; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid var(--line);
  overflow-wrap: break-word; }
th { font-weight: 600; color: var(--muted); white-space: nowrap; }
.pairs { display: grid; grid-template-columns: max-content auto; gap: .2rem 1.5rem; margin: 0; }
.pairs dt { color: var(--muted); }
.pairs dd { margin: 0; font-variant-numeric: tabular-nums; }
ul { margin: .25rem 0; padding-left: 1.25rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem;
  margin: .6rem 0; }
.card header { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .25rem .75rem; }
details summary { cursor: pointer; margin-top: .4rem; }
code.branch, .branch { overflow-wrap: normal; word-break: keep-all; }
.ref { white-space: nowrap; }
.member + .member { margin-top: .2rem; }
.queue h2 { display: flex; flex-wrap: wrap; align-items: baseline; gap: .2rem .5rem; }
.alert.trouble { font-size: 1.05em; }
.alert pre { background: transparent; padding: 0; }
.toplinks { font-size: 1.05em; margin: .5rem 0; }
body.wide { max-width: 100rem; }
.nowrap { white-space: nowrap; }
@media (max-width: 40rem) {
  body { padding: .6rem; }
  thead { display: none; }
  tr { display: block; border-bottom: 1px solid var(--line); padding: .3rem 0; }
  td { display: block; border: 0; padding: .1rem 0; }
  td::before { content: attr(data-label) ": "; color: var(--muted); }
}
`;

/** For `style-src` in the Content-Security-Policy. */
export const STATUS_CSS_HASH = `sha256-${createHash('sha256').update(STATUS_CSS).digest('base64')}`;
