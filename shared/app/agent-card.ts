import type { Config, ProfileConfig } from '../config/config.ts';
import { resolveProfilePrivacy } from '../domain/privacy.ts';

/** What this build implements; the card never claims more (A2A.md §9, §16). */
export interface ImplementedCapabilities {
  readonly streaming: boolean;
  readonly pushNotifications: boolean;
  readonly extendedAgentCard: boolean;
}

export const implementedCapabilities: ImplementedCapabilities = {
  streaming: true,
  pushNotifications: true,
  extendedAgentCard: false,
};

export interface AgentCard {
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly supportedInterfaces: { url: string; protocolBinding: 'JSONRPC'; protocolVersion: string }[];
  readonly provider?: { organization: string; url: string };
  readonly capabilities: ImplementedCapabilities;
  readonly securitySchemes?: Record<string, unknown>;
  readonly securityRequirements?: { schemes: Record<string, { list: string[] }> }[];
  readonly defaultInputModes: string[];
  readonly defaultOutputModes: string[];
  readonly skills: { id: string; name: string; description: string; tags: string[]; examples?: string[] }[];
}

/** The JSON-RPC endpoint of a profile: every profile at /agents/<id>; `default` is also served at the root. */
export const rpcUrlOf = (baseUrl: string, profileId: string): string => `${baseUrl}/agents/${profileId}`;

const skillsOf = (profileId: string, profile: ProfileConfig): AgentCard['skills'] =>
  profile.skills.length > 0
    ? profile.skills.map((skill) => ({ ...skill, tags: [...skill.tags] }))
    : [{ id: profileId, name: profile.name, description: profile.description, tags: [profileId] }];

/** Builds the public agent card of one profile (A2A.md §9). */
export const buildAgentCard = (
  config: Config,
  profileId: string,
  baseUrl: string,
  capabilities: ImplementedCapabilities = implementedCapabilities,
): AgentCard | undefined => {
  const profile = config.profiles[profileId];
  if (profile === undefined) return undefined;
  // A profile that cannot keep a result is not published (I-REFUSE); its card is a 404.
  if (resolveProfilePrivacy(config, profileId).refusal !== undefined) return undefined;
  const authenticated = Object.keys(config.auth.tokens).length > 0;
  return {
    name: profile.name,
    description: profile.description,
    version: profile.version,
    supportedInterfaces: [
      { url: rpcUrlOf(baseUrl, profileId), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities,
    ...(authenticated
      ? {
          securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
          securityRequirements: [{ schemes: { bearer: { list: [] } } }],
        }
      : {}),
    defaultInputModes: [...profile.inputModes],
    defaultOutputModes: [...profile.outputModes],
    skills: skillsOf(profileId, profile),
  };
};
