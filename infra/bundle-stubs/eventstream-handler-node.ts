/**
 * Stand-in for `@aws-sdk/eventstream-handler-node` in deployed bundles (decision 0029). A client
 * builds its payload handler when it is constructed; only the event-stream middleware of an
 * operation with an event-stream input (Bedrock's InvokeModelWithBidirectionalStream) calls it,
 * and no function calls one (test/infra/house-bundles.test.ts).
 */
import { EVENT_STREAMS_NOT_BUNDLED } from './smithy-event-streams.ts';

export const eventStreamPayloadHandlerProvider = (_options: unknown) => ({
  handle: (): never => {
    throw new Error(EVENT_STREAMS_NOT_BUNDLED);
  },
});
