import type { Artifact, JsonObject, JsonValue, Message, Part } from './a2a.ts';

/**
 * Redaction for the `redacted` answer level (docs/configuration.md, `privacy`): deterministic, idempotent,
 * fail closed.
 *
 * Every pattern is written so that it cannot backtrack catastrophically: quantifiers before a
 * required literal are bounded, or the pattern may only start where a run of its characters
 * starts (a lookbehind), so each character is scanned a bounded number of times.
 *
 * Idempotence has two guards: replacement tokens contain no digits, no `@`, and start with `[`,
 * which no pattern accepts where a secret starts; and `redactText` repeats its passes until the
 * text no longer changes, so `redactText(redactText(x)) === redactText(x)` holds by construction.
 * A text that still changes after a few passes is fully masked.
 *
 * The patterns below run in the order given; validators (the Luhn and IBAN checksums, dates, IPv4
 * addresses) leave look-alikes unmasked, trading a few false negatives for fewer false positives.
 */

export type RedactionKind = 'SECRET' | 'EMAIL' | 'PHONE' | 'IBAN' | 'CARD';

/** What a value that could not be redacted safely becomes. */
export const fullyRedacted = '[REDACTED]';

export const toRedactionToken = (kind: RedactionKind): string => `[REDACTED:${kind}]`;

const tokenPattern = /^\[REDACTED(?::[A-Z]+)?\]$/;

export const isRedactionToken = (value: string): boolean => tokenPattern.test(value);

export interface RedactionPattern {
  readonly id: string;
  /** Applied with `matchAll`; the `g` flag is added when missing. */
  readonly regex: RegExp;
  /** The replacement for one match; returning `match[0]` keeps it (a failed validation). */
  readonly replace: (match: RegExpMatchArray) => string;
}

export interface Redactor {
  redactText(text: string): string;
  redactJson(value: JsonValue): JsonValue;
  redactParts(parts: readonly Part[]): Part[];
  redactMessage(message: Message): Message;
  redactArtifacts(artifacts: readonly Artifact[]): Artifact[];
}

const maxPasses = 8;

// ---------------------------------------------------------------------------------------------
// Replacement helpers

const replaceWhole =
  (kind: RedactionKind) =>
  (match: RegExpMatchArray): string =>
    isRedactionToken(match[0]) ? match[0] : toRedactionToken(kind);

/**
 * Masks the first capture group of `groups` that took part in the match; the rest of the match
 * (a setting name, a scheme, quotes) is kept. Needs the `d` flag.
 */
const replaceGroup =
  (kind: RedactionKind, groups: readonly number[]) =>
  (match: RegExpMatchArray): string => {
    const start = match.index ?? 0;
    for (const group of groups) {
      const value = match[group];
      const span = match.indices?.[group];
      if (value === undefined || span === undefined) {
        continue;
      }
      if (isRedactionToken(value)) {
        return match[0];
      }
      return `${match[0].slice(0, span[0] - start)}${toRedactionToken(kind)}${match[0].slice(span[1] - start)}`;
    }
    if (match.indices === undefined) {
      throw new Error('replaceGroup needs a pattern with the d flag');
    }
    return match[0];
  };

interface DigitGroup {
  readonly start: number;
  readonly end: number;
  readonly digits: string;
}

const toDigitGroups = (text: string): DigitGroup[] =>
  [...text.matchAll(/\d+/g)].map((found) => ({
    start: found.index ?? 0,
    end: (found.index ?? 0) + found[0].length,
    digits: found[0],
  }));

interface GroupRunRule {
  readonly kind: RedactionKind;
  /** Digit counts outside this range are never valid, so they are not even checked. */
  readonly minDigits: number;
  readonly maxDigits: number;
  readonly isValid: (text: string, groups: readonly DigitGroup[]) => boolean;
  /** A candidate that this accepts is kept as a whole. */
  readonly isExcluded?: (text: string) => boolean;
}

/**
 * Masks the span covered by every contiguous run of digit groups that `isValid` accepts (from the
 * first accepted start to the last accepted end), and keeps the match when none is accepted. The
 * regexes take the longest candidate; this finds the number inside it.
 */
const replaceValidGroupRuns =
  ({ kind, minDigits, maxDigits, isValid, isExcluded }: GroupRunRule) =>
  (match: RegExpMatchArray): string => {
    const text = match[0];
    if (isExcluded?.(text)) {
      return text;
    }
    const groups = toDigitGroups(text);
    let from = Number.POSITIVE_INFINITY;
    let to = -1;
    for (let first = 0; first < groups.length; first += 1) {
      let digitCount = 0;
      for (let last = first; last < groups.length; last += 1) {
        digitCount += groups[last]!.digits.length;
        if (digitCount > maxDigits) {
          break;
        }
        const start = groups[first]!.start;
        const end = groups[last]!.end;
        if (digitCount < minDigits || (start >= from && end <= to)) {
          continue;
        }
        if (isValid(text.slice(start, end), groups.slice(first, last + 1))) {
          from = Math.min(from, start);
          to = Math.max(to, end);
        }
      }
    }
    if (to < 0) {
      return text;
    }
    // An area code in parentheses goes with the number: `(030) 1234567`, not `([REDACTED:PHONE]`.
    const start = from === groups[0]?.start && text.startsWith('(') ? 0 : from;
    return `${text.slice(0, start)}${toRedactionToken(kind)}${text.slice(to)}`;
  };

// ---------------------------------------------------------------------------------------------
// Validators

/** Luhn checksum, as every payment card number carries. */
export const isLuhnValid = (digits: string): boolean => {
  let sum = 0;
  for (let index = 0; index < digits.length; index += 1) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) {
        digit -= 9;
      }
    }
    sum += digit;
  }
  return digits.length > 0 && sum % 10 === 0;
};

/** Groupings cards are printed in: 4-4-4-4(-1..3), 4-4-4-1..3 (13–15 digits), 4-6-4 and 4-6-5. */
const isCardGrouping = (lengths: readonly number[]): boolean => {
  const shape = lengths.join('-');
  return /^4-4-4-[1-4]$|^4-4-4-4-[1-3]$|^4-6-[45]$/.test(shape);
};

const isCardNumber = (_text: string, groups: readonly DigitGroup[]): boolean => {
  const digits = groups.map((group) => group.digits).join('');
  if (digits.length < 13 || digits.length > 19) {
    return false;
  }
  if (groups.length > 1 && isCardGrouping(groups.map((group) => group.digits.length))) {
    return true;
  }
  // Other groupings need the checksum, and no group shorter than 3 digits (dates, times).
  return isLuhnValid(digits) && groups.every((group) => group.digits.length >= 3);
};

/** Countries that issue IBANs (SWIFT registry, including the partial/experimental ones). */
const ibanCountries = new Set(
  (
    'AD AE AL AO AT AZ BA BE BF BG BH BI BJ BR BY CF CG CH CI CM CR CV CY CZ DE DJ DK DO DZ EE EG ES FI ' +
    'FK FO FR GA GB GE GI GL GQ GR GT GW HN HR HU IE IL IQ IR IS IT JO KM KW KZ LB LC LI LT LU LV LY MA ' +
    'MC MD ME MG MK ML MN MR MT MU MZ NE NI NL NO OM PK PL PS PT QA RO RS RU SA SC SD SE SI SK SM SN SO ' +
    'ST SV TD TG TL TN TR UA VA VG XK YE'
  ).split(' '),
);

/** ISO 13616 check: move the first four characters to the end, letters as 10..35, mod 97 = 1. */
export const isIbanChecksumValid = (compact: string): boolean => {
  const rearranged = `${compact.slice(4)}${compact.slice(0, 4)}`.toUpperCase();
  let remainder = 0;
  for (const char of rearranged) {
    const code = char.charCodeAt(0);
    const value = code >= 65 && code <= 90 ? code - 55 : code - 48;
    if (value < 0 || value > 35) {
      return false;
    }
    remainder = (remainder * (value > 9 ? 100 : 10) + value) % 97;
  }
  return remainder === 1;
};

/**
 * An IBAN is masked when its country issues IBANs and a prefix of 15–34 characters is either
 * written in capitals (the printed form; no checksum needed, so a mistyped IBAN is masked too) or
 * passes mod-97 (lower-case text, where the shape alone matches too much). The regex may have run
 * on into the following words; what follows the accepted prefix is kept.
 */
const redactIbanAtStart = (text: string): string | undefined => {
  const compact = text.replace(/[ -]/g, '');
  if (!/^[A-Za-z]{2}\d{2}/.test(compact) || !ibanCountries.has(compact.slice(0, 2).toUpperCase())) {
    return undefined;
  }
  /** Where the n-th compact character ends in `text`. */
  const ends = [...text].flatMap((char, index) => (char === ' ' || char === '-' ? [] : [index + 1]));
  for (let length = Math.min(compact.length, 34); length >= 15; length -= 1) {
    const candidate = compact.slice(0, length);
    if (candidate === candidate.toUpperCase() || isIbanChecksumValid(candidate)) {
      return `${toRedactionToken('IBAN')}${text.slice(ends[length - 1])}`;
    }
  }
  return undefined;
};

/** The candidate may start with a word that is not an IBAN (`AF00 DE89…`): try each group start. */
const replaceIban = (match: RegExpMatchArray): string => {
  const text = match[0];
  for (let start = 0; start < text.length; start += 1) {
    if (start > 0 && text[start - 1] !== ' ' && text[start - 1] !== '-') {
      continue;
    }
    const redacted = redactIbanAtStart(text.slice(start));
    if (redacted !== undefined) {
      return `${text.slice(0, start)}${redacted}`;
    }
  }
  return text;
};

/** An IPv4 address anywhere in the candidate (not part of a longer dotted run such as 06.12.34.56.78). */
const containsDottedQuad = (text: string): boolean => /(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![.\d])/.test(text);

/** A date written as 2026-11-30, 30.11.2026 or 11/30/2026 somewhere among the groups. */
const containsDate = (text: string, groups: readonly DigitGroup[]): boolean => {
  for (let index = 0; index + 2 < groups.length; index += 1) {
    const [a, b, c] = [groups[index]!, groups[index + 1]!, groups[index + 2]!];
    const firstSeparator = text.slice(a.end, b.start);
    const secondSeparator = text.slice(b.end, c.start);
    if (firstSeparator !== secondSeparator || !/^[-./]$/.test(firstSeparator)) {
      continue;
    }
    const lengths = [a.digits.length, b.digits.length, c.digits.length];
    const yearFirst = lengths[0] === 4 && lengths[1]! <= 2 && lengths[2]! <= 2;
    const yearLast = lengths[0]! <= 2 && lengths[1]! <= 2 && lengths[2]! >= 2 && lengths[2]! <= 4;
    if (yearFirst || yearLast) {
      return true;
    }
  }
  return false;
};

/**
 * National numbers: with an area code in parentheses or a trunk prefix `0`, 7–13 digits; the US
 * local form 555-1234; otherwise three or more groups with 9–13 digits. Never something containing
 * a date (and a candidate containing an IPv4 address is left alone as a whole).
 */
const isNationalPhone = (text: string, groups: readonly DigitGroup[]): boolean => {
  const digitCount = groups.reduce((count, group) => count + group.digits.length, 0);
  if (groups.length < 2 || digitCount > 13 || containsDate(text, groups)) {
    return false;
  }
  if (text.startsWith('(') || text.startsWith('0')) {
    return digitCount >= 7;
  }
  if (/^\d{3}-\d{4}$/.test(text)) {
    return true;
  }
  return groups.length >= 3 && digitCount >= 9;
};

const replaceEmail = (match: RegExpMatchArray): string => {
  const domain = match[0].slice(match[0].lastIndexOf('@') + 1);
  const topLevel = domain.slice(domain.lastIndexOf('.') + 1);
  // `pkg@1.2.3` is a version, not an address: the top-level label needs a letter.
  return /\p{L}/u.test(topLevel) ? toRedactionToken('EMAIL') : match[0];
};

// ---------------------------------------------------------------------------------------------
// Patterns, in the order they run: whole blocks and named settings first, so an e-mail address or
// a number inside a secret is masked as part of the secret.

/** Setting names whose value is a secret after `=` or `:` (`password: hunter2`, `"apiKey": "…"`). */
const strongSecretNames =
  'password|passwd|passphrase|pwd|secret[_-]?key|secret|access[_-]?token|refresh[_-]?token|token|' +
  'api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?';

/** Short names that are a secret only as `name=value` (query parameters, env files). */
const weakSecretNames = 'key|sig|signature|auth|session|sessionid|jsessionid|sid|x-amz-credential';

export const redactionPatterns: readonly RedactionPattern[] = [
  {
    id: 'pem-private-key',
    regex:
      /-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY[ A-Z0-9]{0,20}-----(?:[A-Za-z0-9+/=\s:,.]|-(?!----END))*(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY[ A-Z0-9]{0,20}-----)?/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'url-credentials',
    regex: /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/([^\s/?#[\]]+)@/dg,
    replace: replaceGroup('SECRET', [1]),
  },
  {
    id: 'authorization-header',
    regex:
      /(?<![A-Za-z0-9_-])(?:proxy-)?authorization["']?[ \t]{0,3}[:=][ \t]{0,3}["']?([A-Za-z][A-Za-z0-9._~+/=-]*(?:[ \t]{1,5}[A-Za-z0-9._~+/-]+=*)?)/dgi,
    replace: replaceGroup('SECRET', [1]),
  },
  {
    id: 'bearer-token',
    regex: /(?<![A-Za-z0-9_-])bearer[ \t]{1,10}([A-Za-z0-9._~+/-]{8,}=*)/dgi,
    replace: replaceGroup('SECRET', [1]),
  },
  {
    id: 'secret-setting',
    regex: new RegExp(
      `(?:${strongSecretNames})["']?[ \\t]{0,3}(?:=|:(?!//))[ \\t]{0,3}(?:"([^"\\r\\n]+)"?|'([^'\\r\\n]+)'?|([^\\s"'&,;<>[\\]{}()]+))`,
      'dgi',
    ),
    replace: replaceGroup('SECRET', [1, 2, 3]),
  },
  {
    id: 'secret-parameter',
    regex: new RegExp(`(?<![A-Za-z0-9])(?:${weakSecretNames})=([^\\s"'&,;<>[\\]{}()#]+)`, 'dgi'),
    replace: replaceGroup('SECRET', [1]),
  },
  {
    id: 'jwt',
    regex: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?/g,
    replace: replaceWhole('SECRET'),
  },
  {
    // OpenAI (sk-…, sk-proj-…, sk-svcacct-…) and Anthropic (sk-ant-…) keys.
    id: 'sk-api-key',
    regex: /(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'github-token',
    regex: /(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'slack-token',
    regex: /(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{10,255}/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'google-api-key',
    regex: /AIza[A-Za-z0-9_-]{30,64}/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'stripe-key',
    regex: /(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,255}|whsec_[A-Za-z0-9]{20,255}/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'aws-access-key-id',
    regex: /(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}/g,
    replace: replaceWhole('SECRET'),
  },
  {
    id: 'email',
    // The local part takes every RFC 5322 atext character, so `{x}@example.com` is masked too.
    regex:
      /(?<![\p{L}\p{N}!#$%&'*+/=?^_`{|}~.-])[\p{L}\p{N}!#$%&'*+/=?^_`{|}~.-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu,
    replace: replaceEmail,
  },
  {
    id: 'iban',
    regex:
      /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,4})?(?![A-Za-z0-9])/g,
    replace: replaceIban,
  },
  {
    id: 'card-number',
    regex: /(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)/g,
    replace: replaceValidGroupRuns({ kind: 'CARD', minDigits: 13, maxDigits: 19, isValid: isCardNumber }),
  },
  {
    id: 'phone-international',
    regex: /(?<![\d+])\+[1-9](?:[ ./()-]{0,3}\d){6,14}(?!\d)/g,
    replace: replaceWhole('PHONE'),
  },
  {
    id: 'phone-national',
    regex:
      /(?<![\w+.,/-])(?!\d{4}[-./]\d{1,2}[-./]\d{1,2}(?!\d))(?!\d{1,2}[-./]\d{1,2}[-./]\d{2,4}(?!\d))(?:\(\d{2,5}\)[ ./-]{0,2}\d{2,8}(?:[ ./-]{1,2}\d{2,8}){0,3}|0\d{1,4}(?:[ ./-]{1,2}\d{2,8}){1,4}|\d{2,4}(?:[ .-]\d{2,4}){2,4}|\d{3}-\d{4})(?!\d|[./-]\d)/g,
    replace: replaceValidGroupRuns({
      kind: 'PHONE',
      minDigits: 7,
      maxDigits: 13,
      isValid: isNationalPhone,
      isExcluded: containsDottedQuad,
    }),
  },
];

// ---------------------------------------------------------------------------------------------
// The redactor

const secretKeyWords =
  /password|passwd|passphrase|secret|token(?!s|count|izer|limit|type|usage)|apikey|accesskey|privatekey|credential|authorization|cookie|signature/;
const secretKeyNames = /^(?:pwd|pass|auth|sig|key|pin|cvv|cvc|otp|session|sessionid)$/;

/** Data keys whose values are secrets whatever they look like (`{"password": "hunter2"}`). */
export const isSecretKey = (key: string): boolean => {
  const normalized = key.toLowerCase().replace(/[^a-z0-9]/g, '');
  return secretKeyWords.test(normalized) || secretKeyNames.test(normalized);
};

const mediaTypeShape = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}$/;

const toCompiled = (pattern: RedactionPattern): RedactionPattern => {
  const { flags, source } = pattern.regex;
  return { ...pattern, regex: new RegExp(source, flags.includes('g') ? flags : `${flags}g`) };
};

const hasOwn = <K extends string>(value: object, key: K): value is Record<K, unknown> =>
  Object.hasOwn(value, key);

/**
 * Builds a redactor from a list of patterns. `redactionPatterns` is the production list; tests
 * pass their own to exercise the fail-closed paths.
 */
export const createRedactor = (patterns: readonly RedactionPattern[]): Redactor => {
  const compiled = patterns.map(toCompiled);

  const applyPattern = (text: string, pattern: RedactionPattern): string => {
    let output = '';
    let cursor = 0;
    for (const match of text.matchAll(pattern.regex)) {
      const index = match.index ?? 0;
      output += text.slice(cursor, index) + pattern.replace(match);
      cursor = index + match[0].length;
    }
    return cursor === 0 ? text : output + text.slice(cursor);
  };

  const redactText = (text: string): string => {
    if (typeof text !== 'string') {
      return fullyRedacted;
    }
    try {
      let current = text;
      for (let pass = 0; pass < maxPasses; pass += 1) {
        const next = compiled.reduce(applyPattern, current);
        if (next === current) {
          return current;
        }
        current = next;
      }
      return fullyRedacted;
    } catch {
      return fullyRedacted;
    }
  };

  /** A leaf under a secret key: whatever it looks like, only its absence or emptiness is kept. */
  const redactUnknownText = (value: unknown): string =>
    typeof value === 'string' ? redactText(value) : fullyRedacted;

  const maskSecretLeaf = (value: unknown): JsonValue => {
    if (value === null || typeof value === 'boolean') {
      return value;
    }
    if (typeof value === 'string') {
      return value === '' || isRedactionToken(value) ? value : toRedactionToken('SECRET');
    }
    return typeof value === 'number' ? toRedactionToken('SECRET') : fullyRedacted;
  };

  /** A number is checked as text too: a card number in a JSON number is still a card number. */
  const redactLeaf = (value: unknown): JsonValue => {
    if (value === null || typeof value === 'boolean') {
      return value;
    }
    if (typeof value === 'string') {
      return redactText(value);
    }
    if (typeof value === 'number' && Number.isFinite(value)) {
      const text = String(value);
      const redacted = redactText(text);
      return redacted === text ? value : redacted;
    }
    // Not JSON (a function, a bigint, undefined, a non-finite number): keep nothing.
    return fullyRedacted;
  };

  /** Keys are redacted as text too; a key that collides after redaction gets a ` #n` suffix. */
  const toUniqueKey = (candidate: string, taken: ReadonlySet<string>, limit: number): string | undefined => {
    if (!taken.has(candidate)) {
      return candidate;
    }
    for (let suffix = 2; suffix <= limit + 1; suffix += 1) {
      const key = redactText(`${candidate} #${suffix}`);
      if (!taken.has(key)) {
        return key;
      }
    }
    return undefined;
  };

  const walkJson = (value: unknown, underSecretKey: boolean): JsonValue => {
    if (typeof value !== 'object' || value === null) {
      return underSecretKey ? maskSecretLeaf(value) : redactLeaf(value);
    }
    if (Array.isArray(value)) {
      return value.map((item: unknown) => walkJson(item, underSecretKey));
    }
    const entries = Object.entries(value);
    const taken = new Set<string>();
    const output: [string, JsonValue][] = [];
    for (const [key, item] of entries) {
      const redactedKey = redactText(key);
      const uniqueKey = toUniqueKey(redactedKey, taken, entries.length);
      if (uniqueKey === undefined) {
        continue;
      }
      taken.add(uniqueKey);
      const secret = underSecretKey || isSecretKey(key) || isSecretKey(redactedKey);
      output.push([uniqueKey, walkJson(item, secret)]);
    }
    return Object.fromEntries(output);
  };

  const redactJson = (value: JsonValue): JsonValue => {
    try {
      return walkJson(value, false);
    } catch {
      return fullyRedacted;
    }
  };

  const redactJsonObject = (value: JsonObject): JsonObject | undefined => {
    const redacted = redactJson(value);
    return typeof redacted === 'object' && redacted !== null && !Array.isArray(redacted)
      ? redacted
      : undefined;
  };

  /** Metadata, filename and media type of a text or data part, each redacted. */
  const redactPartCommon = (part: Part): Omit<Part, 'text' | 'data' | 'raw' | 'url'> => {
    const metadata = part.metadata === undefined ? undefined : redactJsonObject(part.metadata);
    return {
      ...(metadata === undefined ? {} : { metadata }),
      ...(part.filename === undefined ? {} : { filename: redactText(part.filename) }),
      ...(part.mediaType === undefined ? {} : { mediaType: redactText(part.mediaType) }),
    };
  };

  /** File content (bytes or a URL) is never kept; neither is its name, which can identify a person. */
  const toFileNote = (part: Part): Part => {
    const mediaType =
      typeof part.mediaType === 'string' && mediaTypeShape.test(part.mediaType) ? part.mediaType : 'file';
    return { text: redactText(`[file removed by redaction: ${mediaType}]`) };
  };

  const redactPart = (part: Part): Part => {
    try {
      if (typeof part !== 'object' || part === null) {
        return { text: fullyRedacted };
      }
      if (hasOwn(part, 'raw') || hasOwn(part, 'url')) {
        return toFileNote(part);
      }
      if (hasOwn(part, 'text')) {
        return { text: redactUnknownText(part.text), ...redactPartCommon(part) };
      }
      if (hasOwn(part, 'data')) {
        return { data: walkJson(part.data, false), ...redactPartCommon(part) };
      }
      return { text: fullyRedacted };
    } catch {
      return { text: fullyRedacted };
    }
  };

  const redactParts = (parts: readonly Part[]): Part[] =>
    Array.isArray(parts) ? parts.map(redactPart) : [{ text: fullyRedacted }];

  const redactStrings = (values: readonly string[] | undefined): string[] | undefined =>
    values === undefined ? undefined : values.map(redactText);

  const redactMessage = (message: Message): Message => {
    const metadata = message.metadata === undefined ? undefined : redactJsonObject(message.metadata);
    const extensions = redactStrings(message.extensions);
    return {
      messageId: message.messageId,
      ...(message.contextId === undefined ? {} : { contextId: message.contextId }),
      ...(message.taskId === undefined ? {} : { taskId: message.taskId }),
      role: message.role,
      parts: redactParts(message.parts),
      ...(metadata === undefined ? {} : { metadata }),
      ...(extensions === undefined ? {} : { extensions }),
      ...(message.referenceTaskIds === undefined ? {} : { referenceTaskIds: [...message.referenceTaskIds] }),
    };
  };

  const redactArtifact = (artifact: Artifact): Artifact => {
    const metadata = artifact.metadata === undefined ? undefined : redactJsonObject(artifact.metadata);
    const extensions = redactStrings(artifact.extensions);
    return {
      artifactId: artifact.artifactId,
      ...(artifact.name === undefined ? {} : { name: redactText(artifact.name) }),
      ...(artifact.description === undefined ? {} : { description: redactText(artifact.description) }),
      parts: redactParts(artifact.parts),
      ...(metadata === undefined ? {} : { metadata }),
      ...(extensions === undefined ? {} : { extensions }),
    };
  };

  const redactArtifacts = (artifacts: readonly Artifact[]): Artifact[] => artifacts.map(redactArtifact);

  return { redactText, redactJson, redactParts, redactMessage, redactArtifacts };
};

const defaultRedactor = createRedactor(redactionPatterns);

export const redactText = (text: string): string => defaultRedactor.redactText(text);
export const redactJson = (value: JsonValue): JsonValue => defaultRedactor.redactJson(value);
export const redactParts = (parts: readonly Part[]): Part[] => defaultRedactor.redactParts(parts);
export const redactMessage = (message: Message): Message => defaultRedactor.redactMessage(message);
export const redactArtifacts = (artifacts: readonly Artifact[]): Artifact[] =>
  defaultRedactor.redactArtifacts(artifacts);
