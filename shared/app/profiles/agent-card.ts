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
  readonly supportedInterfaces: { url: string; protocolBinding: 'JSONRPC'; protocolVersion: string }[];
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
 * The v0.3 card fields, served alongside the v1.0 ones (docs/protocol.md §9 "Serving v0.3 and v1.0 clients
 * from one card", a2a-js `toCompatAgentCard(…, {embedV1Interfaces: true})`): a 0.3 client finds
 * the same JSON-RPC endpoint in `url`, which answers v0.3 method names in v0.3 (docs/protocol.md §1).
 * v1.0 clients ignore them; `supportedInterfaces` stays v1.0 only, so the v1.0 TCK sees one
 * interface. Each `securitySchemes` entry carries both shapes side by side (docs/protocol.md §9): the
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
  const url = card.supportedInterfaces[0]?.url ?? '';
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

/** Builds the public agent card of one profile (docs/protocol.md §9), with the v0.3 fields alongside. */
export const buildAgentCard = (
  config: Config,
  profileId: string,
  baseUrl: string,
  capabilities: ImplementedCapabilities = implementedCapabilities,
): (AgentCard & V03CardFields) | undefined => {
  const card = buildV1AgentCard(config, profileId, baseUrl, capabilities);
  if (card === undefined) return undefined;
  // The v0.3 fields carry the schemes in both shapes: they replace the v1.0-only entries.
  const { securitySchemes: _v1Only, ...rest } = card;
  return { ...rest, ...v03CardFieldsOf(card) };
};

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
    supportedInterfaces: [
      { url: rpcUrlOf(baseUrl, profileId), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: {
      ...capabilities,
      extendedAgentCard: capabilities.extendedAgentCard && declaresExtendedCard(config, profileId),
      ...(capabilities.pushNotifications ? { extensions: [{ ...pushDeliveriesExtension }] } : {}),
    },
    ...securityOf(config.auth),
    defaultInputModes: [...profile.inputModes],
    defaultOutputModes: [...profile.outputModes],
    skills: skillsOf(profileId, profile),
  };
};

/**
 * GetExtendedAgentCard's answer: the public card with the profile's `extendedCard` description
 * and extra skills (an extra skill with a public skill's id replaces it). `undefined` when the
 * card does not declare it.
 */
export const buildExtendedAgentCard = (
  config: Config,
  profileId: string,
  baseUrl: string,
): (AgentCard & V03CardFields) | undefined => {
  const card = buildAgentCard(config, profileId, baseUrl);
  const extended = config.profiles[profileId]?.extendedCard;
  if (card === undefined || extended === undefined || !card.capabilities.extendedAgentCard) return undefined;
  const extra = extended.skills.map((skill) => ({ ...skill, tags: [...skill.tags] }));
  const extraIds = new Set(extra.map((skill) => skill.id));
  return {
    ...card,
    description: extended.description ?? card.description,
    skills: [...card.skills.filter((skill) => !extraIds.has(skill.id)), ...extra],
  };
};
