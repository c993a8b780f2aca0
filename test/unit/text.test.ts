import { describe, expect, it } from 'vitest';
import { truncateText } from '../../shared/domain/text.ts';

describe('truncateText', () => {
  it('keeps a string within the limit as it is', () => {
    expect(truncateText('abc', 3)).toBe('abc');
    expect(truncateText('', 0)).toBe('');
  });

  it('cuts at the limit', () => {
    expect(truncateText('abcdef', 4)).toBe('abcd');
  });

  it('leaves out a surrogate pair the cut would split, never half of it', () => {
    // 'a' then 𝔘 (two code units): a cut at 2 would keep the high half alone.
    expect(truncateText('a𝔘b', 2)).toBe('a');
    expect(truncateText('a𝔘b', 3)).toBe('a𝔘');
    const cut = truncateText('😀'.repeat(40), 63);
    expect(cut).toBe('😀'.repeat(31));
    expect(Buffer.from(cut, 'utf8').toString('utf8')).toBe(cut);
  });
});
