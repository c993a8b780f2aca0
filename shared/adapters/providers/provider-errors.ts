import type { JsonObject } from '../../domain/a2a.ts';
import { ProviderFailedError, ProviderUnavailableError } from '../../domain/errors.ts';

/**
 * One classification for every model adapter: what the next provider in
 * the chain might answer — connection errors, timeouts, HTTP 408/429/5xx, Bedrock throttling
 * and outages — is ProviderUnavailableError (fallback); any other refusal (4xx, validation,
 * an answer we cannot read) is ProviderFailedError (no fallback).
 */

/** Bedrock error names that mean "try elsewhere", whatever status a proxy put on them. */
export const unavailableErrorNames: ReadonlySet<string> = new Set([
  'ThrottlingException',
  'ServiceUnavailableException',
  'ModelNotReadyException',
  'InternalServerException',
  'ModelTimeoutException',
  // A ConverseStream broken off by the model mid-answer ("retry your request").
  'ModelStreamErrorException',
]);

export const isUnavailableStatus = (status: number): boolean =>
  status === 408 || status === 429 || status >= 500;

export const classifyStatus = (providerId: string, status: number, cause?: unknown): Error =>
  isUnavailableStatus(status)
    ? new ProviderUnavailableError(providerId, status, { cause })
    : new ProviderFailedError(providerId, status, { cause });

/**
 * A request that threw before an HTTP status arrived. The caller's own signal (cancel, lost
 * lease) stops the run: its reason is rethrown and never triggers a fallback. Anything else —
 * our timeout, a refused or reset connection — is an unavailable provider.
 */
export const classifyThrown = (providerId: string, error: unknown, callerSignal?: AbortSignal): Error => {
  if (callerSignal?.aborted) return asError(callerSignal.reason);
  return new ProviderUnavailableError(providerId, undefined, { cause: error });
};

/**
 * Each combined signal's timeout signal, held for as long as the combined signal lives.
 * `AbortSignal.any` holds its sources only weakly, and `AbortSignal.timeout`'s timer holds its
 * signal only weakly too: without this entry a garbage collection during the request collects
 * the timeout signal and the timeout never fires (Node 20, reproduced in
 * test/unit/provider-timeout.test.ts) — a provider that stops answering would then hold the run
 * until its lease instead of falling back.
 */
const timeoutOf = new WeakMap<AbortSignal, AbortSignal>();

/** The caller's signal combined with a per-request timeout. */
export const withTimeout = (timeoutMs: number, callerSignal?: AbortSignal): AbortSignal => {
  const timeout = AbortSignal.timeout(timeoutMs);
  if (!callerSignal) return timeout;
  const combined = AbortSignal.any([callerSignal, timeout]);
  timeoutOf.set(combined, timeout);
  return combined;
};

const asError = (reason: unknown): Error =>
  reason instanceof Error ? reason : new DOMException('The run was stopped', 'AbortError');

/**
 * A tool call's arguments as a model sent them: JSON text (OpenAI, a streamed Bedrock
 * `toolUse` input), or the object itself (some OpenAI-compatible servers). Empty is no
 * arguments; malformed text or a value that is not an object reaches the tool as {}, and its
 * schema check tells the model.
 */
export const toolArgumentsOf = (raw: string | JsonObject | null | undefined): JsonObject => {
  if (raw === null || raw === undefined || raw === '') return {};
  if (typeof raw !== 'string') return raw;
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
};
