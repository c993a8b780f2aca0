import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  a2aMethods,
  type ConformanceStack,
  errorInfoOf,
  type RpcReply,
  startConformanceStack,
  violatedFields,
} from './support.ts';

/**
 * The JSON-RPC binding requirements of the A2A v1.0 TCK (docs/protocol.md §2, §8, §9, §13.4): envelope,
 * error objects, error codes with their ErrorInfo, version handling, and the request size cap.
 * Raw HTTP only: these are wire facts.
 */

let sut: ConformanceStack;
let card: { capabilities: { streaming?: boolean; pushNotifications?: boolean } };

beforeAll(async () => {
  sut = await startConformanceStack('conf-jsonrpc');
  card = (await (await fetch(`${sut.baseUrl}/agents/tck/.well-known/agent-card.json`)).json()) as typeof card;
});
afterAll(async () => {
  await sut?.stop();
});

/** TCK test_error_handling: the error object validates with additionalProperties:false. */
const expectWellFormedError = (reply: RpcReply, code?: number) => {
  expect(reply.status).toBe(200);
  expect(reply.body.jsonrpc).toBe('2.0');
  expect(reply.body).not.toHaveProperty('result');
  const error = reply.error!;
  expect(Object.keys(error).every((key) => ['code', 'message', 'data'].includes(key))).toBe(true);
  expect(Number.isInteger(error.code)).toBe(true);
  expect(typeof error.message).toBe('string');
  if (error.data !== undefined) expect(Array.isArray(error.data)).toBe(true);
  // All codes lie in the A2A range or the JSON-RPC standard range (test_error_codes.py).
  expect(
    (error.code <= -32001 && error.code >= -32099) || (error.code <= -32600 && error.code >= -32700),
  ).toBe(true);
  if (code !== undefined) expect(error.code).toBe(code);
};

const nonexistent = 'tck-nonexistent-task-00000000';

describe('JSON-RPC binding', () => {
  it('JSONRPC-FMT-001: every answer is a JSON-RPC 2.0 envelope echoing the id, with result xor error', async () => {
    for (const id of ['req-1', 42]) {
      const ok = await sut.send('tck-complete-task');
      expect(ok.body.jsonrpc).toBe('2.0');
      expect('result' in ok.body && !('error' in ok.body)).toBe(true);
      const failed = await sut.rpc('GetTask', { id: nonexistent }, { id });
      expect(failed.body).toMatchObject({ jsonrpc: '2.0', id });
      expect('error' in failed.body && !('result' in failed.body)).toBe(true);
    }
    const unidentified = await sut.post('[1,2]', { headers: { 'Content-Type': 'application/json' } });
    expect(unidentified.body.id).toBeNull();
  });

  it('JSONRPC-FMT-002: responses are application/json, errors included, with HTTP 200', async () => {
    for (const reply of [
      await sut.send('tck-complete-task'),
      await sut.rpc('GetTask', { id: nonexistent }),
      await sut.rpc('NoSuchMethod', {}),
    ]) {
      expect(reply.status).toBe(200);
      expect(reply.contentType).toMatch(/^application\/json/);
    }
  });

  it('JSONRPC-SVC-001: every PascalCase v1.0 method is routed; other names are -32601', async () => {
    for (const method of a2aMethods) {
      const reply = await sut.rpc(method, {});
      if (reply.error) expect(reply.error.code, method).not.toBe(-32601);
    }
    expectWellFormedError(await sut.rpc('sendMessage', {}), -32601);
    expectWellFormedError(await sut.rpc('message/send', {}), -32601);
    expectWellFormedError(await sut.rpc('toString', {}), -32601);
  });

  it('JSONRPC-ERR-003: A2A errors carry a google.rpc.ErrorInfo in data (TASK_NOT_FOUND, a2a-protocol.org)', async () => {
    const reply = await sut.rpc('GetTask', { id: nonexistent });
    expectWellFormedError(reply, -32001);
    expect(reply.error?.data).toHaveLength(1);
    expect(errorInfoOf(reply.error)).toMatchObject({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'TASK_NOT_FOUND',
      domain: 'a2a-protocol.org',
      metadata: { taskId: nonexistent },
    });
  });

  it('JSON-RPC envelope errors: -32700 parse, -32600 invalid request, -32602 with a BadRequest naming the field', async () => {
    const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
    const parse = await sut.post('{"jsonrpc":"2.0",', { headers });
    expectWellFormedError(parse, -32700);
    for (const body of [
      '[]',
      '"text"',
      '{"jsonrpc":"1.0","id":1,"method":"GetTask"}',
      '{"jsonrpc":"2.0","id":1}',
    ]) {
      expectWellFormedError(await sut.post(body, { headers }), -32600);
    }
    const invalid = await sut.rpc('GetTask', { id: 42 });
    expectWellFormedError(invalid, -32602);
    expect(violatedFields(invalid.error)).toEqual(['id']);
    const parts = await sut.rpc('SendMessage', {
      message: { messageId: 'm', role: 'ROLE_USER', parts: 'invalid' },
    });
    expectWellFormedError(parts, -32602);
    expect(violatedFields(parts.error)).toContain('message.parts');
  });

  it('request bodies above the cap are refused with -32600 naming the request, never a 5xx', async () => {
    const big = 'x'.repeat(100 * 1024);
    const reply = await sut.rpc('SendMessage', {
      message: { messageId: 'big', role: 'ROLE_USER', parts: [{ text: big }] },
    });
    expectWellFormedError(reply, -32600);
    expect(violatedFields(reply.error)).toEqual(['request']);
    // The ErrorInfo names the limit and its value (decision 0052).
    expect(reply.error?.data?.[0]).toMatchObject({
      reason: 'REQUEST_BYTES_EXCEEDED',
      metadata: { limit: 'maxRequestBytes', max: String(64 * 1024) },
    });
    expect(reply.body.id).toBeNull();
    // Just under the cap is served.
    const fits = await sut.send('tck-complete-task', {
      message: { parts: [{ text: 'y'.repeat(60 * 1024) }] },
    });
    expect(fits.error).toBeUndefined();
  });
});

describe('error codes (TCK test_error_codes.py, non-streaming)', () => {
  it('GetTask on a nonexistent id → -32001', async () => {
    expectWellFormedError(await sut.rpc('GetTask', { id: nonexistent }), -32001);
  });

  it('CancelTask on a nonexistent id → -32001', async () => {
    const reply = await sut.rpc('CancelTask', { id: nonexistent });
    expectWellFormedError(reply, -32001);
    expect(errorInfoOf(reply.error)?.reason).toBe('TASK_NOT_FOUND');
  });

  it('CreateTaskPushNotificationConfig → -32003 when push is not declared', async () => {
    const task = (await sut.send('tck-complete-task')).result.task as { id: string };
    const reply = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      url: 'http://localhost:9/webhook',
    });
    if (card.capabilities.pushNotifications === true) {
      expect(reply.error?.code).not.toBe(-32003);
    } else {
      expectWellFormedError(reply, -32003);
      expect(errorInfoOf(reply.error)?.reason).toBe('PUSH_NOTIFICATION_NOT_SUPPORTED');
    }
  });

  it('SendStreamingMessage → -32004 when streaming is not declared (else an SSE stream)', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 's1',
      method: 'SendStreamingMessage',
      params: { message: { messageId: 'tck-complete-task-s1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    });
    const response = await fetch(sut.agentUrl('tck'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body,
    });
    if (card.capabilities.streaming === true) {
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await response.body?.cancel();
    } else {
      const reply = (await response.json()) as { error: { code: number } };
      expect(reply.error.code).toBe(-32004);
    }
  });

  it('Content-Type text/plain → -32005 with id null', async () => {
    const reply = await sut.post(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
      {
        headers: { 'Content-Type': 'text/plain', 'A2A-Version': '1.0' },
      },
    );
    expectWellFormedError(reply, -32005);
    expect(reply.body.id).toBeNull();
    expect(errorInfoOf(reply.error)?.reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
  });

  it('A2A-Version 99.0 → -32009', async () => {
    const reply = await sut.rpc('GetTask', { id: nonexistent }, { headers: { 'A2A-Version': '99.0' } });
    expectWellFormedError(reply, -32009);
  });
});

describe('versions and service parameters', () => {
  it('VER-SERVER-002: an unsupported A2A-Version is refused with VERSION_NOT_SUPPORTED', async () => {
    const reply = await sut.rpc('SendMessage', {}, { headers: { 'A2A-Version': '99.0' } });
    expectWellFormedError(reply, -32009);
    expect(errorInfoOf(reply.error)).toMatchObject({
      reason: 'VERSION_NOT_SUPPORTED',
      domain: 'a2a-protocol.org',
    });
  });

  it('VER-SERVER-003: an empty A2A-Version gets a result or a well-formed error', async () => {
    const reply = await sut.rpc(
      'SendMessage',
      { message: { messageId: 'tck-complete-task-v3', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
      { headers: { 'A2A-Version': '' } },
    );
    if (reply.error) expectWellFormedError(reply);
    else expect(reply.result.task).toBeDefined();
    // 1.0.x is 1.0 (patch versions do not count), also as a query parameter.
    const patch = await sut.rpc('GetTask', { id: nonexistent }, { headers: { 'A2A-Version': '1.0.1' } });
    expect(patch.error?.code).toBe(-32001);
  });

  it('the A2A-Extensions header is accepted', async () => {
    const reply = await sut.rpc(
      'GetTask',
      { id: nonexistent },
      { headers: { 'A2A-Extensions': 'https://example.com/ext/unknown, https://example.com/ext/other' } },
    );
    expect(reply.error?.code).toBe(-32001);
  });
});
