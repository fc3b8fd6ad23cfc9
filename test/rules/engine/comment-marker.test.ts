import { describe, expect, it } from 'vitest';
import { commentMarker, extractMarkers } from '../../../src/rules/engine/comment-marker.ts';

describe('comment markers', () => {
  it('is stable for the same rule and text', () => {
    expect(commentMarker('triage', 'Thanks!')).toEqual(commentMarker('triage', 'Thanks!'));
  });

  it('encodes rule names so the marker stays one HTML comment', () => {
    const marker = commentMarker('a: b --> c', 'x');
    expect(marker.id).toMatch(/^hookbot:rule=a%3A b --%3E c:key=[0-9a-f]{16}$/);
    expect(marker.html.indexOf('-->')).toBe(marker.html.length - 3);
  });

  it('finds the markers in a note, as the executor and the snapshot reader do', () => {
    const one = commentMarker('triage', 'Thanks!');
    const two = commentMarker('close stale', 'Closing.');
    expect(extractMarkers(`Thanks!\n\n${one.html}`)).toEqual([one.id]);
    expect(extractMarkers(`${one.html} and ${two.html}`)).toEqual([one.id, two.id]);
    expect(extractMarkers('<!-- hookbot:rule=x:key=short -->')).toEqual([]);
  });
});
