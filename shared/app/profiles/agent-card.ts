import { type AuthSettings, hasAuthScheme } from '../../config/auth.ts';
import type { Config, ProfileConfig } from '../../config/config.ts';
import { resolveProfilePrivacy } from '../../domain/privacy.ts';

/** What this build implements; the card never claims more (docs/protocol.md §9). */
export interface ImplementedCapabilities {
  readonly streaming: boolean;
  readonly pushNotifications: boolean;
  readonly extendedAgentCard: boolean;
}

export const implementedCapabilities: ImplementedCapabilities = {
  streaming: true,
  pushNotifications: true,
  extendedAgentCard: true,
};

/** AgentCapabilities.extensions[] (docs/protocol.md §9). */
export interface AgentExtension {
  readonly uri: string;
  readonly description?: string;
  readonly required?: boolean;
}

/**
 * This server's push-deliveries extension (docs/protocol.md §7): the method ListTaskPushDeliveries.
 * Declared wherever push notifications are; a breaking change gets a new URI.
 */
export const pushDeliveriesExtension: AgentExtension = {
  uri: 'urn:a2a-serverless:ext:push-deliveries:v1',
  description:
    'ListTaskPushDeliveries {taskId, configId?, pageSize?, pageToken?}: the webhook deliveries of ' +
    'one of your tasks and their attempts (outcome, HTTP status, time, next attempt); metadata only.',
  required: false,
};

export interface AgentCard {
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly supportedInterfaces: {
    url: string;
    protocolBinding: 'JSONRPC' | 'HTTP+JSON';
    protocolVersion: string;
  }[];
  readonly provider?: { organization: string; url: string };
  readonly capabilities: ImplementedCapabilities & { readonly extensions?: AgentExtension[] };
  readonly securitySchemes?: Record<string, SecurityScheme>;
  readonly securityRequirements?: { schemes: Record<string, { list: string[] }> }[];
  readonly defaultInputModes: string[];
  readonly defaultOutputModes: string[];
  readonly skills: { id: string; name: string; description: string; tags: string[]; examples?: string[] }[];
}

/** The v1.0 scheme shapes this server declares (docs/protocol.md §9: a oneof, one wrapper key per kind). */
export type SecurityScheme =
  | { readonly httpAuthSecurityScheme: { readonly scheme: string; readonly bearerFormat?: string } }
  | { readonly apiKeySecurityScheme: { readonly location: 'header'; readonly name: string } };

/** The same schemes in v0.3's OpenAPI-like shape (`types/src/types.ts`@v0.3.0, a2a-js `buildCompatHttp|ApiKey`). */
export type V03SecurityScheme =
  | { readonly type: 'http'; readonly scheme: string; readonly bearerFormat?: string }
  | { readonly type: 'apiKey'; readonly in: 'header'; readonly name: string };

export const toV03SecurityScheme = (scheme: SecurityScheme): V03SecurityScheme =>
  'httpAuthSecurityScheme' in scheme
    ? { type: 'http', ...scheme.httpAuthSecurityScheme }
    : { type: 'apiKey', in: scheme.apiKeySecurityScheme.location, name: scheme.apiKeySecurityScheme.name };

/**
 * The v0.3 card fields, served alongside the v1.0 ones on the v0.3 card only (docs/protocol.md §9
 * "v0.3 clients", a2a-js `toCompatAgentCard(…, {embedV1Interfaces: true})`): a 0.3 client finds
 * the same JSON-RPC endpoint in `url`, which answers v0.3 method names in v0.3 (docs/protocol.md §1).
 * The v1.0 card leaves them out: its schema forbids unknown fields. Each `securitySchemes` entry carries both shapes side by side (docs/protocol.md §9): the
 * v1.0 wrapper key (`httpAuthSecurityScheme`…) and v0.3's `type`/`scheme`/`in`/`name`; neither
 * version's readers look at the other's keys, and the v0.3 JSON schema allows extra properties.
 */
export interface V03CardFields {
  readonly protocolVersion: string;
  readonly url: string;
  readonly preferredTransport: 'JSONRPC';
  readonly additionalInterfaces: { url: string; transport: 'JSONRPC' }[];
  readonly supportsAuthenticatedExtendedCard: boolean;
  /** v0.3 security requirements: `[{scheme: [scopes]}]`, alternatives as in `securityRequirements`. */
  readonly security?: Record<string, string[]>[];
  /** Both shapes in each entry: the v1.0 one unchanged, plus the v0.3 keys. */
  readonly securitySchemes?: Record<string, SecurityScheme & V03SecurityScheme>;
}

/** The v0.3 protocol version the card announces (the v0.3 spec's own spelling, `Major.Minor.Patch`). */
export const v03CardProtocolVersion = '0.3.0';

export const v03CardFieldsOf = (card: AgentCard): V03CardFields => {
  const url = card.supportedInterfaces.find((entry) => entry.protocolBinding === 'JSONRPC')?.url ?? '';
  return {
    protocolVersion: v03CardProtocolVersion,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    supportsAuthenticatedExtendedCard: card.capabilities.extendedAgentCard,
    ...(card.securitySchemes !== undefined
      ? {
          securitySchemes: Object.fromEntries(
            Object.entries(card.securitySchemes).map(([name, scheme]) => [
              name,
              { ...toV03SecurityScheme(scheme), ...scheme },
            ]),
          ),
        }
      : {}),
    ...(card.securityRequirements !== undefined
      ? {
          security: card.securityRequirements.map((requirement) =>
            Object.fromEntries(Object.entries(requirement.schemes).map(([name, { list }]) => [name, list])),
          ),
        }
      : {}),
  };
};

/** The JSON-RPC endpoint of a profile: every profile at /agents/<id>; `default` is also served at the root. */
export const rpcUrlOf = (baseUrl: string, profileId: string): string => `${baseUrl}/agents/${profileId}`;

const skillsOf = (profileId: string, profile: ProfileConfig): AgentCard['skills'] =>
  profile.skills.length > 0
    ? profile.skills.map((skill) => ({ ...skill, tags: [...skill.tags] }))
    : [{ id: profileId, name: profile.name, description: profile.description, tags: [profileId] }];

/**
 * The schemes a client may use (docs/protocol.md §9, docs/security.md), as alternatives: a bearer token (a
 * JWT from the configured issuer, or a static token in local mode) or an API key in X-API-Key.
 * An installation without any scheme declares none.
 */
export const securityOf = (
  auth: AuthSettings,
): Pick<AgentCard, 'securitySchemes' | 'securityRequirements'> => {
  const schemes: Record<string, SecurityScheme> = {};
  if (auth.jwt !== undefined || Object.keys(auth.tokens ?? {}).length > 0) {
    schemes.bearer = {
      httpAuthSecurityScheme: {
        scheme: 'Bearer',
        ...(auth.jwt !== undefined ? { bearerFormat: 'JWT' } : {}),
      },
    };
  }
  if (Object.keys(auth.apiKeys ?? {}).length > 0) {
    schemes.apiKey = { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } };
  }
  const names = Object.keys(schemes);
  if (names.length === 0) return {};
  return {
    securitySchemes: schemes,
    securityRequirements: names.map((name) => ({ schemes: { [name]: { list: [] } } })),
  };
};

/**
 * A profile's card declares `capabilities.extendedAgentCard` only when the profile configures an
 * `extendedCard` AND the installation authenticates: GetExtendedAgentCard MUST require
 * authentication (docs/protocol.md §9), and the `local` caller of an unauthenticated installation is
 * nobody in particular, so such an installation could never serve it.
 */
export const declaresExtendedCard = (config: Config, profileId: string): boolean =>
  implementedCapabilities.extendedAgentCard &&
  hasAuthScheme(config.auth) &&
  config.profiles[profileId]?.extendedCard !== undefined;

/** The card versions served: v1.0's, and v0.3's for clients that ask for it (docs/protocol.md §9). */
export type CardVersion = '1.0' | '0.3';

/** The v1.0 card with the v0.3 fields alongside: the card a v0.3 client reads (docs/protocol.md §9). */
export type V03AgentCard = Omit<AgentCard, 'securitySchemes'> & V03CardFields;

/** The v0.3 card: the v1.0 card plus the v0.3 fields, whose scheme entries carry both shapes. */
const toV03AgentCard = (card: AgentCard): V03AgentCard => {
  const { securitySchemes: _v1Only, ...rest } = card;
  return { ...rest, ...v03CardFieldsOf(card) };
};

/**
 * Builds the public agent card of one profile (docs/protocol.md §9): the pure v1.0 card, or with
 * `version` "0.3" the card a v0.3 client reads (the v1.0 one with the v0.3 fields alongside).
 */
export function buildAgentCard(
  config: Config,
  profileId: string,
  baseUrl: string,
  version?: '1.0',
  capabilities?: ImplementedCapabilities,
): AgentCard | undefined;
export function buildAgentCard(
  config: Config,
  profileId: string,
  baseUrl: string,
  version: '0.3',
  capabilities?: ImplementedCapabilities,
): V03AgentCard | undefined;
export function buildAgentCard(
  config: Config,
  profileId: string,
  baseUrl: string,
  version: CardVersion,
  capabilities?: ImplementedCapabilities,
): AgentCard | V03AgentCard | undefined;
export function buildAgentCard(
  config: Config,
  profileId: string,
  baseUrl: string,
  version: CardVersion = '1.0',
  capabilities: ImplementedCapabilities = implementedCapabilities,
): AgentCard | V03AgentCard | undefined {
  const card = buildV1AgentCard(config, profileId, baseUrl, capabilities);
  return card === undefined || version === '1.0' ? card : toV03AgentCard(card);
}

/** This server's own extensions where it serves them, then the profile's (docs/protocol.md §9). */
const extensionsOf = (
  profile: { readonly extensions?: readonly AgentExtension[] },
  capabilities: ImplementedCapabilities,
): { extensions?: AgentExtension[] } => {
  const extensions = [
    ...(capabilities.pushNotifications ? [{ ...pushDeliveriesExtension }] : []),
    ...(profile.extensions ?? []).map((extension) => ({ ...extension })),
  ];
  return extensions.length > 0 ? { extensions } : {};
};

/** The extension URIs a profile declares `required`: every request to it must list them (-32008). */
export const requiredExtensionsOf = (config: Config, profileId: string): string[] =>
  (config.profiles[profileId]?.extensions ?? [])
    .filter((extension) => extension.required)
    .map((extension) => extension.uri);

const buildV1AgentCard = (
  config: Config,
  profileId: string,
  baseUrl: string,
  capabilities: ImplementedCapabilities,
): AgentCard | undefined => {
  const profile = config.profiles[profileId];
  if (profile === undefined) return undefined;
  // A profile that cannot keep a result is not published (I-REFUSE); its card is a 404.
  if (resolveProfilePrivacy(config, profileId).refusal !== undefined) return undefined;
  return {
    name: profile.name,
    description: profile.description,
    version: profile.version,
    // Both bindings at the agent's one base URL (docs/protocol.md §14): JSON-RPC posts to it,
    // HTTP+JSON appends its routes. JSON-RPC first: the SDKs pick the first they speak. Every
    // protocol combination served, in preference order: 1.0, then 1.1 with its task generations
    // at the same URL (docs/protocol.md §16), which only a client asking for 1.1 gets.
    supportedInterfaces: (['1.0', '1.1'] as const).flatMap((protocolVersion) =>
      (['JSONRPC', 'HTTP+JSON'] as const).map((protocolBinding) => ({
        url: rpcUrlOf(baseUrl, profileId),
        protocolBinding,
        protocolVersion,
      })),
    ),
    capabilities: {
      ...capabilities,
      extendedAgentCard: capabilities.extendedAgentCard && declaresExtendedCard(config, profileId),
      ...extensionsOf(profile, capabilities),
    },
    ...securityOf(config.auth),
    defaultInputModes: [...profile.inputModes],
    defaultOutputModes: [...profile.outputModes],
    skills: skillsOf(profileId, profile),
  };
};

/**
 * GetExtendedAgentCard's answer: the public card with the profile's `extendedCard` description
 * and extra skills (an extra skill with a public skill's id replaces it), in the version asked
 * for. `undefined` when the card does not declare it.
 */
export const buildExtendedAgentCard = (
  config: Config,
  profileId: string,
  baseUrl: string,
  version: CardVersion = '1.0',
): AgentCard | V03AgentCard | undefined => {
  const card = buildAgentCard(config, profileId, baseUrl);
  const extended = config.profiles[profileId]?.extendedCard;
  if (card === undefined || extended === undefined || !card.capabilities.extendedAgentCard) return undefined;
  const extra = extended.skills.map((skill) => ({ ...skill, tags: [...skill.tags] }));
  const extraIds = new Set(extra.map((skill) => skill.id));
  const full: AgentCard = {
    ...card,
    description: extended.description ?? card.description,
    skills: [...card.skills.filter((skill) => !extraIds.has(skill.id)), ...extra],
  };
  return version === '1.0' ? full : toV03AgentCard(full);
};
