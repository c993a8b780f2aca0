/**
 * At most `maxUnits` UTF-16 code units of `value`, never half a character: a surrogate pair the
 * cut would split is left out whole (a lone half becomes U+FFFD once encoded as UTF-8, the way a
 * sealed field, a log line or an HTTP body is stored).
 */
export const truncateText = (value: string, maxUnits: number): string => {
  if (value.length <= maxUnits) return value;
  const last = value.charCodeAt(maxUnits - 1);
  const splitsPair = last >= 0xd800 && last <= 0xdbff;
  return value.slice(0, splitsPair ? maxUnits - 1 : maxUnits);
};
