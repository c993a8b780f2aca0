import { epochSeconds } from './task.ts';
/**
 * Privacy levels and the two ceilings of a run (docs/invariants.md I-CEILING, I-REFUSE,
 * I-TIGHTEN). Pure functions over raw setting values: the configuration keeps levels as plain
 * strings, and this module is the one place that reads them.
 *
 * Absent versus invalid:
 * - the global level, absent, is the documented default `metadata`;
 * - a provider or task level, absent, constrains nothing;
 * - any level that is given but is not exactly one of the four names (wrong case, empty string,
 *   `null`, a number) reads as `metadata`.
 */

/** Strict → loose. The position in this list is the order every comparison uses. */
export const privacyLevels = ['none', 'metadata', 'redacted', 'full'] as const;

export type PrivacyLevel = (typeof privacyLevels)[number];

export const defaultPrivacyLevel: PrivacyLevel = 'metadata';

/** The two ceilings of a run: `audit` for its steps, `answer` for its result and history. */
export interface Ceilings {
  readonly audit: PrivacyLevel;
  readonly answer: PrivacyLevel;
}

/** Raw level settings as they come from the configuration (strings, possibly invalid). */
export interface PrivacySources {
  /** `privacy.level`; `undefined` means the default `metadata`. */
  readonly globalLevel: unknown;
  /** The provider's `privacyLevel`; `undefined` means no constraint. */
  readonly providerLevel?: unknown;
  /** The profile's (task's) `privacyLevel`; `undefined` means no constraint. */
  readonly taskLevel?: unknown;
}

/** The sources of one profile on its primary provider, with the ids that name their settings. */
export interface ProfilePrivacySources extends PrivacySources {
  readonly profileId: string;
  readonly providerId: string;
}

export type Retainability =
  | { readonly retainable: true }
  | {
      readonly retainable: false;
      /** The setting that decides the refusal, e.g. `providers.strict.privacyLevel`. */
      readonly setting: string;
      /** Every setting that alone would refuse the profile, strictest first. */
      readonly settings: readonly string[];
    };

export interface ProfilePrivacy {
  readonly profileId: string;
  /** `undefined` when the profile or its primary provider does not exist. */
  readonly primaryProviderId: string | undefined;
  /** The ceilings a run starts with, on the primary provider. */
  readonly ceilings: Ceilings;
  /** Present when the profile cannot keep a result (I-REFUSE). */
  readonly refusal?: { readonly setting: string; readonly settings: readonly string[] };
}

/**
 * The parts of the parsed configuration this module reads. `Config` from
 * `shared/config/config.ts` is assignable to it; declaring the shape here keeps the domain free of
 * the schema library.
 */
export interface PrivacyConfigView {
  readonly privacy: { readonly level?: unknown; readonly retention?: RetentionSettings };
  readonly providers: Readonly<Record<string, { readonly privacyLevel?: unknown }>>;
  readonly profiles: Readonly<
    Record<string, { readonly providers: readonly string[]; readonly privacyLevel?: unknown }>
  >;
}

export interface RetentionSettings {
  readonly agentRun?: unknown;
  readonly approval?: unknown;
}

export type RetentionKind = 'agentRun' | 'approval';

export type AnswerOutcome = 'keep-full' | 'keep-redacted' | 'not-retainable';

export const globalLevelSetting = 'privacy.level';
export const providerLevelSetting = (providerId: string): string => `providers.${providerId}.privacyLevel`;
export const taskLevelSetting = (profileId: string): string => `profiles.${profileId}.privacyLevel`;

const rankOf = (level: PrivacyLevel): number => privacyLevels.indexOf(level);

export const isPrivacyLevel = (value: unknown): value is PrivacyLevel =>
  typeof value === 'string' && (privacyLevels as readonly string[]).includes(value);

/** Reads a level setting. Anything that is not exactly one of the four names is `metadata`. */
export const parsePrivacyLevel = (raw: unknown): PrivacyLevel =>
  isPrivacyLevel(raw) ? raw : defaultPrivacyLevel;

/** Reads a provider or task level: absent (`undefined`) is no constraint, invalid is `metadata`. */
export const parseOptionalPrivacyLevel = (raw: unknown): PrivacyLevel | undefined =>
  raw === undefined ? undefined : parsePrivacyLevel(raw);

/** The stricter of two levels. */
export const tighten = (a: PrivacyLevel, b: PrivacyLevel): PrivacyLevel => (rankOf(a) <= rankOf(b) ? a : b);

/** Whether `level` allows at least as much as `minimum`. */
export const isAtLeast = (level: PrivacyLevel, minimum: PrivacyLevel): boolean =>
  rankOf(level) >= rankOf(minimum);

const tightenOptional = (level: PrivacyLevel, other: PrivacyLevel | undefined): PrivacyLevel =>
  other === undefined ? level : tighten(level, other);

/** The global default `metadata` keeps a full answer; every other global level is itself. */
const toGlobalAnswerLevel = (globalLevel: PrivacyLevel): PrivacyLevel =>
  globalLevel === 'metadata' ? 'full' : globalLevel;

/**
 * audit = min(global, provider, task); answer = min(globalAnswer, provider, task),
 * where globalAnswer is `full` when the global level is `metadata`.
 */
export const resolveCeilings = (sources: PrivacySources): Ceilings => {
  const globalLevel = parsePrivacyLevel(sources.globalLevel);
  const providerLevel = parseOptionalPrivacyLevel(sources.providerLevel);
  const taskLevel = parseOptionalPrivacyLevel(sources.taskLevel);
  return {
    audit: tightenOptional(tightenOptional(globalLevel, providerLevel), taskLevel),
    answer: tightenOptional(tightenOptional(toGlobalAnswerLevel(globalLevel), providerLevel), taskLevel),
  };
};

/** What may be stored of a result under an answer ceiling (I-CEILING). */
export const answerOutcome = (answer: PrivacyLevel): AnswerOutcome => {
  switch (answer) {
    case 'full':
      return 'keep-full';
    case 'redacted':
      return 'keep-redacted';
    case 'metadata':
    case 'none':
      return 'not-retainable';
    default:
      return assertNever(answer);
  }
};

const isRetainableLevel = (answer: PrivacyLevel): boolean => answerOutcome(answer) !== 'not-retainable';

/**
 * I-REFUSE: a profile is refused when the answer level on its primary provider is `metadata` or
 * `none`. The global level can only contribute `none` (a global `metadata` keeps full answers), so
 * `metadata` always comes from the provider or the task. Ties are named provider, task, global.
 */
export const checkRetainable = (sources: ProfilePrivacySources): Retainability => {
  const { answer } = resolveCeilings(sources);
  if (isRetainableLevel(answer)) {
    return { retainable: true };
  }
  const providerLevel = parseOptionalPrivacyLevel(sources.providerLevel);
  const taskLevel = parseOptionalPrivacyLevel(sources.taskLevel);
  const contributions: { setting: string; level: PrivacyLevel | undefined }[] = [
    { setting: providerLevelSetting(sources.providerId), level: providerLevel },
    { setting: taskLevelSetting(sources.profileId), level: taskLevel },
    { setting: globalLevelSetting, level: toGlobalAnswerLevel(parsePrivacyLevel(sources.globalLevel)) },
  ];
  const causes = contributions
    .filter((source): source is { setting: string; level: PrivacyLevel } => source.level !== undefined)
    .filter((source) => !isRetainableLevel(source.level))
    .sort((a, b) => rankOf(a.level) - rankOf(b.level));
  const settings = causes.map((cause) => cause.setting);
  return { retainable: false, setting: settings[0] ?? globalLevelSetting, settings };
};

const closedCeilings: Ceilings = { audit: 'none', answer: 'none' };

/**
 * The ceilings a profile's run starts with, and whether the profile may be published or run at all.
 * A profile or primary provider that does not exist fails closed: `none`, refused, naming the
 * setting that is missing.
 */
export const resolveProfilePrivacy = (config: PrivacyConfigView, profileId: string): ProfilePrivacy => {
  const profile = Object.hasOwn(config.profiles, profileId) ? config.profiles[profileId] : undefined;
  if (profile === undefined) {
    const setting = `profiles.${profileId}`;
    return {
      profileId,
      primaryProviderId: undefined,
      ceilings: closedCeilings,
      refusal: { setting, settings: [setting] },
    };
  }
  const providerId = profile.providers[0];
  const provider =
    providerId !== undefined && Object.hasOwn(config.providers, providerId)
      ? config.providers[providerId]
      : undefined;
  if (providerId === undefined || provider === undefined) {
    const setting = `profiles.${profileId}.providers`;
    return {
      profileId,
      primaryProviderId: undefined,
      ceilings: closedCeilings,
      refusal: { setting, settings: [setting] },
    };
  }
  const sources: ProfilePrivacySources = {
    profileId,
    providerId,
    globalLevel: config.privacy.level,
    providerLevel: provider.privacyLevel,
    taskLevel: profile.privacyLevel,
  };
  const retainability = checkRetainable(sources);
  const ceilings = resolveCeilings(sources);
  return retainability.retainable
    ? { profileId, primaryProviderId: providerId, ceilings }
    : {
        profileId,
        primaryProviderId: providerId,
        ceilings,
        refusal: { setting: retainability.setting, settings: retainability.settings },
      };
};

/**
 * Before each provider attempt, fallbacks included, both ceilings tighten with that provider's
 * level (I-TIGHTEN). They never loosen: an absent provider level leaves them as they are.
 */
export const ceilingsForAttempt = (current: Ceilings, providerLevel: unknown): Ceilings => {
  const level = parseOptionalPrivacyLevel(providerLevel);
  if (level === undefined) {
    return current;
  }
  return { audit: tighten(current.audit, level), answer: tighten(current.answer, level) };
};

export const defaultRetentionDays: Readonly<Record<RetentionKind, number>> = { agentRun: 30, approval: 7 };

/** An upper bound that keeps expiry timestamps representable (100 years). */
export const maxRetentionDays = 36_525;

const secondsPerDay = 86_400;

/**
 * Retention in whole seconds. Days may be fractional (tests use a few seconds' worth); zero,
 * negative, non-finite or non-number values mean "no override", i.e. the default. A positive value
 * keeps at least one second, and values above 100 years are capped.
 */
export const retentionSeconds = (retention: RetentionSettings | undefined, kind: RetentionKind): number => {
  const raw = retention?.[kind];
  const days = typeof raw === 'number' && Number.isFinite(raw) && raw > 0 ? raw : defaultRetentionDays[kind];
  return Math.max(1, Math.round(Math.min(days, maxRetentionDays) * secondsPerDay));
};

/** When something kept under `kind` from `now` expires (epoch seconds, I-PURGE). */
export const retentionExpiry = (
  retention: RetentionSettings | undefined,
  kind: RetentionKind,
  now: Date,
): number => epochSeconds(now) + retentionSeconds(retention, kind);

const assertNever = (value: never): never => {
  throw new Error(`Unexpected value: ${String(value)}`);
};
