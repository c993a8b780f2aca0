import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConformanceStack,
  conformanceConfigWith,
  errorInfoOf,
  type JsonObject,
  startConformanceStack,
  taskOf,
  userMessage,
} from './support.ts';

/**
 * Extensions a profile declares (docs/configuration.md profile `extensions`, docs/protocol.md §9):
 * on its card after this server's own, and a `required` one demanded of every request to that
 * agent in `A2A-Extensions` — -32008 on JSON-RPC, 400 FAILED_PRECONDITION on HTTP+JSON (the
 * official TCK's CORE-CAP-004). Other agents of the installation are not affected.
 */

const required = 'urn:a2a:tck:required-extension';
let sut: ConformanceStack;

beforeAll(async () => {
  sut = await startConformanceStack(
    'conf-extensions',
    conformanceConfigWith({
      profiles: {
        strict: {
          name: 'Strict agent',
          description: 'Serves only clients that speak its extension.',
          providers: ['tck'],
          privacyLevel: 'full',
          extensions: [
            { uri: required, description: 'The TCK test extension', required: true },
            { uri: 'urn:example:optional' },
          ],
        },
      },
    }),
  );
});
afterAll(async () => {
  await sut?.stop();
});

describe('profile extensions', () => {
  it('are declared on the card after the server’s own, `required` as configured', async () => {
    const card = (await (await fetch(`${sut.agentUrl('strict')}/.well-known/agent-card.json`)).json()) as {
      capabilities: { extensions: JsonObject[] };
    };
    expect(card.capabilities.extensions.slice(-2)).toEqual([
      { uri: required, description: 'The TCK test extension', required: true },
      { uri: 'urn:example:optional', required: false },
    ]);
  });

  it('a request without the required extension → -32008 / 400; with it, served; other agents unaffected', async () => {
    const refused = await sut.send('tck-complete-task', { profile: 'strict' });
    expect(refused.error).toMatchObject({ code: -32008 });
    expect(errorInfoOf(refused.error)).toMatchObject({
      reason: 'EXTENSION_SUPPORT_REQUIRED',
      metadata: { extension: required },
    });
    const viaRest = await fetch(`${sut.agentUrl('strict')}/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: userMessage('tck-complete-task') }),
    });
    expect(viaRest.status).toBe(400);
    expect(((await viaRest.json()) as { error: JsonObject }).error).toMatchObject({
      status: 'FAILED_PRECONDITION',
    });
    const served = await sut.rpc(
      'SendMessage',
      { message: userMessage('tck-complete-task') },
      { profile: 'strict', headers: { 'A2A-Extensions': required } },
    );
    expect(taskOf(served).status).toMatchObject({ state: 'TASK_STATE_COMPLETED' });
    expect(taskOf(await sut.send('tck-complete-task')).status).toMatchObject({
      state: 'TASK_STATE_COMPLETED',
    });
  });
});
