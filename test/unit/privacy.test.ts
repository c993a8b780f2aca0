import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/config.ts';
import {
  answerOutcome,
  type Ceilings,
  ceilingsForAttempt,
  checkRetainable,
  isAtLeast,
  type PrivacyConfigView,
  type PrivacyLevel,
  parseOptionalPrivacyLevel,
  parsePrivacyLevel,
  privacyLevels,
  resolveCeilings,
  resolveProfilePrivacy,
  retentionSeconds,
  tighten,
} from '../../shared/domain/privacy.ts';

// ---------------------------------------------------------------------------------------------
// The rules of docs/decisions/0005, written out independently of the implementation.

/** How a raw setting reads. `bogus` stands for every invalid value. */
const readsAs = {
  none: 'none',
  metadata: 'metadata',
  redacted: 'redacted',
  full: 'full',
  bogus: 'metadata',
} as const;
type RawLevel = keyof typeof readsAs;

/** The global level's contribution to the answer ceiling: `metadata` keeps a full answer. */
const globalAnswerFor = { none: 'none', metadata: 'full', redacted: 'redacted', full: 'full' } as const;

/** Strict → loose, by hand. */
const strictness: Record<PrivacyLevel, number> = { none: 0, metadata: 1, redacted: 2, full: 3 };
const stricterOf = (levels: PrivacyLevel[]): PrivacyLevel =>
  levels.reduce((a, b) => (strictness[b] < strictness[a] ? b : a));

const rawLevels: RawLevel[] = ['none', 'metadata', 'redacted', 'full', 'bogus'];
const optionalRawLevels: (RawLevel | undefined)[] = [undefined, ...rawLevels];

interface Row {
  global: RawLevel;
  provider: RawLevel | undefined;
  task: RawLevel | undefined;
  audit: PrivacyLevel;
  answer: PrivacyLevel;
  /** The setting named by a refusal: strictest first, ties provider → task → global. */
  refusedBy: string | undefined;
}

const toRow = (global: RawLevel, provider: RawLevel | undefined, task: RawLevel | undefined): Row => {
  const globalLevel = readsAs[global];
  const optional = [provider, task]
    .filter((raw): raw is RawLevel => raw !== undefined)
    .map((raw) => readsAs[raw]);
  const audit = stricterOf([globalLevel, ...optional]);
  const answer = stricterOf([globalAnswerFor[globalLevel], ...optional]);
  const causes = [
    {
      setting: 'providers.primary.privacyLevel',
      level: provider === undefined ? undefined : readsAs[provider],
    },
    { setting: 'profiles.default.privacyLevel', level: task === undefined ? undefined : readsAs[task] },
    { setting: 'privacy.level', level: globalAnswerFor[globalLevel] },
  ].filter((cause) => cause.level === 'none' || cause.level === 'metadata');
  const strictest = causes.find((cause) => cause.level === answer);
  const refused = answer === 'none' || answer === 'metadata';
  return { global, provider, task, audit, answer, refusedBy: refused ? strictest?.setting : undefined };
};

const table: Row[] = rawLevels.flatMap((global) =>
  optionalRawLevels.flatMap((provider) => optionalRawLevels.map((task) => toRow(global, provider, task))),
);

const name = (raw: RawLevel | undefined): string => raw ?? 'absent';

describe('the ceiling table (docs/decisions/0005), every combination', () => {
  it('covers 5 global × 6 provider × 6 task combinations', () => {
    expect(table).toHaveLength(180);
  });

  it.each(table.map((row) => [name(row.global), name(row.provider), name(row.task), row] as const))(
    'global %s, provider %s, task %s',
    (_global, _provider, _task, row) => {
      const sources = {
        profileId: 'default',
        providerId: 'primary',
        globalLevel: row.global,
        ...(row.provider === undefined ? {} : { providerLevel: row.provider }),
        ...(row.task === undefined ? {} : { taskLevel: row.task }),
      };
      expect(resolveCeilings(sources)).toEqual({ audit: row.audit, answer: row.answer });
      const retainability = checkRetainable(sources);
      if (row.refusedBy === undefined) {
        expect(retainability).toEqual({ retainable: true });
      } else {
        expect(retainability).toMatchObject({ retainable: false, setting: row.refusedBy });
      }
    },
  );

  // Anchors written out by hand, so a mistake shared by the table and the code still shows.
  it.each([
    ['metadata', undefined, undefined, { audit: 'metadata', answer: 'full' }],
    ['bogus', undefined, undefined, { audit: 'metadata', answer: 'full' }],
    ['none', undefined, 'full', { audit: 'none', answer: 'none' }],
    ['redacted', 'full', undefined, { audit: 'redacted', answer: 'redacted' }],
    ['metadata', 'redacted', 'full', { audit: 'metadata', answer: 'redacted' }],
    ['full', 'bogus', undefined, { audit: 'metadata', answer: 'metadata' }],
    ['full', undefined, 'none', { audit: 'none', answer: 'none' }],
    ['metadata', 'metadata', undefined, { audit: 'metadata', answer: 'metadata' }],
  ] as const)(
    'anchor: global %s, provider %s, task %s → %o',
    (globalLevel, providerLevel, taskLevel, expected) => {
      expect(resolveCeilings({ globalLevel, providerLevel, taskLevel })).toEqual(expected);
    },
  );
});

describe('reading a level setting', () => {
  it.each(privacyLevels)('reads %s as itself', (level) => {
    expect(parsePrivacyLevel(level)).toBe(level);
  });

  it.each([['FULL'], [' full'], [''], ['public'], [null], [3], [{}]])(
    'reads the invalid value %o as metadata',
    (raw) => {
      expect(parsePrivacyLevel(raw)).toBe('metadata');
      expect(parseOptionalPrivacyLevel(raw)).toBe('metadata');
    },
  );

  it('reads an absent global level as the default metadata, an absent provider/task level as no constraint', () => {
    expect(parsePrivacyLevel(undefined)).toBe('metadata');
    expect(parseOptionalPrivacyLevel(undefined)).toBeUndefined();
  });

  it('reads anything at all as one of the four levels, and as metadata unless it is exactly a level name', () => {
    fc.assert(
      fc.property(fc.anything(), (raw) => {
        const level = parsePrivacyLevel(raw);
        expect(privacyLevels).toContain(level);
        if (!(privacyLevels as readonly unknown[]).includes(raw)) {
          expect(level).toBe('metadata');
        }
      }),
    );
  });
});

describe('refusing a profile that cannot keep a result (I-REFUSE)', () => {
  const configWith = (levels: { global?: string; primary?: string; fallback?: string; task?: string }) =>
    parseConfig({
      privacy: levels.global === undefined ? {} : { level: levels.global },
      providers: {
        strict: {
          type: 'scripted',
          ...(levels.primary === undefined ? {} : { privacyLevel: levels.primary }),
        },
        backup: {
          type: 'scripted',
          ...(levels.fallback === undefined ? {} : { privacyLevel: levels.fallback }),
        },
      },
      profiles: {
        default: {
          name: 'Agent',
          description: 'An agent.',
          providers: ['strict', 'backup'],
          ...(levels.task === undefined ? {} : { privacyLevel: levels.task }),
        },
      },
    });

  it('refuses metadata on the primary provider, naming providers.strict.privacyLevel', () => {
    const privacy = resolveProfilePrivacy(configWith({ primary: 'metadata' }), 'default');
    expect(privacy.refusal?.setting).toBe('providers.strict.privacyLevel');
    expect(privacy.ceilings).toEqual({ audit: 'metadata', answer: 'metadata' });
    expect(privacy.primaryProviderId).toBe('strict');
  });

  it('refuses metadata on the task, naming profiles.default.privacyLevel', () => {
    const privacy = resolveProfilePrivacy(configWith({ global: 'full', task: 'metadata' }), 'default');
    expect(privacy.refusal?.setting).toBe('profiles.default.privacyLevel');
  });

  it('refuses none on the task, naming profiles.default.privacyLevel', () => {
    const privacy = resolveProfilePrivacy(configWith({ task: 'none' }), 'default');
    expect(privacy.refusal?.setting).toBe('profiles.default.privacyLevel');
    expect(privacy.ceilings).toEqual({ audit: 'none', answer: 'none' });
  });

  it('refuses none set globally, naming privacy.level', () => {
    const privacy = resolveProfilePrivacy(configWith({ global: 'none', task: 'full' }), 'default');
    expect(privacy.refusal?.setting).toBe('privacy.level');
  });

  it('refuses an invalid level on the primary provider (it reads as metadata), naming that provider', () => {
    const privacy = resolveProfilePrivacy(configWith({ primary: 'Full' }), 'default');
    expect(privacy.refusal?.setting).toBe('providers.strict.privacyLevel');
  });

  it('names the strictest setting first and lists every setting that alone would refuse', () => {
    const privacy = resolveProfilePrivacy(
      configWith({ global: 'none', primary: 'metadata', task: 'none' }),
      'default',
    );
    expect(privacy.refusal).toEqual({
      setting: 'profiles.default.privacyLevel',
      settings: ['profiles.default.privacyLevel', 'privacy.level', 'providers.strict.privacyLevel'],
    });
  });

  it('does not refuse the global default metadata alone: the answer ceiling is full', () => {
    const privacy = resolveProfilePrivacy(configWith({ global: 'metadata' }), 'default');
    expect(privacy.refusal).toBeUndefined();
    expect(privacy.ceilings).toEqual({ audit: 'metadata', answer: 'full' });
  });

  it('does not refuse an absent global level either (the default is metadata)', () => {
    const privacy = resolveProfilePrivacy(configWith({}), 'default');
    expect(privacy.refusal).toBeUndefined();
    expect(privacy.ceilings).toEqual({ audit: 'metadata', answer: 'full' });
  });

  it('does not refuse for a fallback provider: that tightens per attempt (I-TIGHTEN)', () => {
    const privacy = resolveProfilePrivacy(configWith({ fallback: 'none' }), 'default');
    expect(privacy.refusal).toBeUndefined();
  });

  it('keeps a redacted answer on a redacted task without refusing', () => {
    const privacy = resolveProfilePrivacy(configWith({ global: 'full', task: 'redacted' }), 'default');
    expect(privacy.refusal).toBeUndefined();
    expect(answerOutcome(privacy.ceilings.answer)).toBe('keep-redacted');
  });

  it('fails closed for an unknown profile or primary provider', () => {
    const unknownProfile = resolveProfilePrivacy(configWith({ global: 'full' }), 'missing');
    expect(unknownProfile.refusal?.setting).toBe('profiles.missing');
    expect(unknownProfile.ceilings).toEqual({ audit: 'none', answer: 'none' });

    const dangling: PrivacyConfigView = {
      privacy: { level: 'full' },
      providers: {},
      profiles: { lonely: { providers: ['gone'] } },
    };
    expect(resolveProfilePrivacy(dangling, 'lonely').refusal?.setting).toBe('profiles.lonely.providers');
    expect(resolveProfilePrivacy(dangling, 'toString').refusal?.setting).toBe('profiles.toString');
  });
});

describe('tightening per provider attempt (I-TIGHTEN)', () => {
  const levelArb = fc.constantFrom(...privacyLevels);
  const rawProviderLevelArb = fc.oneof(levelArb, fc.constant(undefined), fc.constant('bogus'), fc.anything());
  const ceilingsArb = fc.record({ audit: levelArb, answer: levelArb });

  it('tightens both ceilings with the fallback provider level', () => {
    const start: Ceilings = { audit: 'metadata', answer: 'full' };
    expect(ceilingsForAttempt(start, 'redacted')).toEqual({ audit: 'metadata', answer: 'redacted' });
    expect(ceilingsForAttempt(start, 'metadata')).toEqual({ audit: 'metadata', answer: 'metadata' });
    expect(ceilingsForAttempt(start, 'none')).toEqual({ audit: 'none', answer: 'none' });
    expect(ceilingsForAttempt(start, 'full')).toEqual(start);
    expect(ceilingsForAttempt(start, undefined)).toEqual(start);
    expect(ceilingsForAttempt(start, 'garbage')).toEqual({ audit: 'metadata', answer: 'metadata' });
  });

  it('never loosens a ceiling, whatever sequence of attempts follows', () => {
    fc.assert(
      fc.property(ceilingsArb, fc.array(rawProviderLevelArb, { maxLength: 8 }), (start, attempts) => {
        let current = start;
        for (const providerLevel of attempts) {
          const next = ceilingsForAttempt(current, providerLevel);
          expect(isAtLeast(current.audit, next.audit)).toBe(true);
          expect(isAtLeast(current.answer, next.answer)).toBe(true);
          const level = parseOptionalPrivacyLevel(providerLevel);
          if (level !== undefined) {
            expect(isAtLeast(level, next.audit) && isAtLeast(level, next.answer)).toBe(true);
          }
          current = next;
        }
      }),
    );
  });

  it('tighten is the stricter of the two: commutative, idempotent, never looser than either', () => {
    fc.assert(
      fc.property(levelArb, levelArb, levelArb, (a, b, c) => {
        expect(tighten(a, b)).toBe(tighten(b, a));
        expect(tighten(a, a)).toBe(a);
        expect(tighten(tighten(a, b), c)).toBe(tighten(a, tighten(b, c)));
        expect(isAtLeast(a, tighten(a, b)) && isAtLeast(b, tighten(a, b))).toBe(true);
        expect([a, b]).toContain(tighten(a, b));
        expect(strictness[tighten(a, b)]).toBe(Math.min(strictness[a], strictness[b]));
      }),
    );
  });

  it.each([
    ['full', 'keep-full'],
    ['redacted', 'keep-redacted'],
    ['metadata', 'not-retainable'],
    ['none', 'not-retainable'],
  ] as const)('an answer ceiling of %s means %s (I-CEILING)', (answer, outcome) => {
    expect(answerOutcome(answer)).toBe(outcome);
  });
});

describe('retention', () => {
  const day = 86_400;

  it.each([
    [undefined, 'agentRun', 30 * day],
    [{}, 'agentRun', 30 * day],
    [{}, 'approval', 7 * day],
    [{ agentRun: 1 }, 'agentRun', day],
    [{ agentRun: 0.5 }, 'agentRun', day / 2],
    [{ agentRun: 2 / day }, 'agentRun', 2],
    [{ agentRun: 1e-9 }, 'agentRun', 1],
    [{ approval: 3 }, 'approval', 3 * day],
    [{ agentRun: 3 }, 'approval', 7 * day],
    [{ agentRun: 0 }, 'agentRun', 30 * day],
    [{ agentRun: -4 }, 'agentRun', 30 * day],
    [{ agentRun: Number.NaN }, 'agentRun', 30 * day],
    [{ agentRun: Number.POSITIVE_INFINITY }, 'agentRun', 30 * day],
    [{ agentRun: '10' }, 'agentRun', 30 * day],
    [{ approval: null }, 'approval', 7 * day],
    [{ agentRun: 1e12 }, 'agentRun', 36_525 * day],
  ] as const)('retention %o for %s is %i seconds', (retention, kind, seconds) => {
    expect(retentionSeconds(retention, kind)).toBe(seconds);
  });

  it('accepts the parsed configuration retention as it is', () => {
    const config = parseConfig({
      privacy: { level: 'full', retention: { agentRun: 0.25, approval: -1 } },
      providers: { local: { type: 'scripted' } },
      profiles: { default: { name: 'A', description: 'B', providers: ['local'] } },
    });
    expect(retentionSeconds(config.privacy.retention, 'agentRun')).toBe(21_600);
    expect(retentionSeconds(config.privacy.retention, 'approval')).toBe(7 * day);
  });

  it('is always a positive whole number of seconds', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.double(), fc.anything()),
        fc.constantFrom('agentRun', 'approval'),
        (raw, kind) => {
          const seconds = retentionSeconds({ [kind]: raw }, kind);
          expect(Number.isInteger(seconds) && seconds >= 1).toBe(true);
        },
      ),
    );
  });
});
