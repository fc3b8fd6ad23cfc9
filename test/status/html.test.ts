import { describe, expect, it } from 'vitest';
import { escapeHtml, markup, trusted } from '../../src/status/html.ts';

describe('escapeHtml', () => {
  const cases: [string, string][] = [
    ['plain', 'plain'],
    ['<script>alert(1)</script>', '&lt;script&gt;alert(1)&lt;/script&gt;'],
    ['a & b', 'a &amp; b'],
    [`"double" 'single'`, '&quot;double&quot; &#39;single&#39;'],
    ['&amp;', '&amp;amp;'],
  ];
  it.each(cases)('%s', (input, output) => {
    expect(escapeHtml(input)).toBe(output);
  });
});

describe('markup', () => {
  it('escapes interpolated strings, in content and attributes alike', () => {
    const title = '"><img src=x onerror=alert(1)>';
    expect(markup`<p title="${title}">${title}</p>`.toString()).toBe(
      '<p title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</p>',
    );
  });

  it('inserts nested fragments as they are, and arrays item by item', () => {
    const items = ['<a>', 'b'].map((text) => markup`<li>${text}</li>`);
    expect(markup`<ul>${items}</ul>`.toString()).toBe('<ul><li>&lt;a&gt;</li><li>b</li></ul>');
  });

  it('renders numbers, and nothing for null, undefined and false', () => {
    expect(markup`${3}|${null}|${undefined}|${false}|${0}`.toString()).toBe('3||||0');
  });

  it('inserts trusted markup unescaped', () => {
    expect(markup`<style>${trusted('a > b {}')}</style>`.toString()).toBe('<style>a > b {}</style>');
  });
});
