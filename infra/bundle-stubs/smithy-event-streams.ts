/**
 * Stand-in for `@smithy/core/event-streams` in deployed bundles (decision 0029). Every client's
 * protocol imports the real module (~23 KB) by a dynamic `import()` that esbuild bundles, and
 * the Bedrock client statically; only an operation with an event-stream member in its input or
 * output schema (Bedrock's ConverseStream, InvokeModelWithResponseStream,
 * InvokeModelWithBidirectionalStream) serialises or parses an event stream, and no function
 * bundles one (test/infra/house-bundles.test.ts reads every bundled command's schema). A
 * Bedrock client still builds its marshaller when it is constructed, so the config resolver and
 * the provider do what the real ones do at construction; everything an event stream would use
 * throws instead of running.
 */

export const EVENT_STREAMS_NOT_BUNDLED =
  'event streams are not bundled into this function (decision 0029): an operation with an event-stream member needs the real @smithy/core/event-streams';

const unreachable = (): never => {
  throw new Error(EVENT_STREAMS_NOT_BUNDLED);
};

/** Every class of the real module: constructing one means an event stream is in use. */
class NotBundled {
  constructor() {
    unreachable();
  }
}

export {
  NotBundled as EventStreamCodec,
  NotBundled as EventStreamMarshaller,
  NotBundled as EventStreamSerde,
  NotBundled as HeaderMarshaller,
  NotBundled as Int64,
  NotBundled as MessageDecoderStream,
  NotBundled as MessageEncoderStream,
  NotBundled as SmithyMessageDecoderStream,
  NotBundled as SmithyMessageEncoderStream,
  NotBundled as UniversalEventStreamMarshaller,
  unreachable as getChunkedStream,
  unreachable as getMessageUnmarshaller,
  unreachable as getUnmarshalledStream,
  unreachable as iterableToReadableStream,
  unreachable as readableStreamToIterable,
  unreachable as universalEventStreamSerdeProvider,
};

/** The marshaller a client keeps in its config; only an event-stream operation calls it. */
export const eventStreamSerdeProvider = (_options: unknown) => ({
  serialize: unreachable,
  deserialize: unreachable,
});

/** As the real resolver: the client's config gets the provider's marshaller. */
export const resolveEventStreamSerdeConfig = <T extends { eventStreamSerdeProvider: (input: T) => unknown }>(
  input: T,
) => Object.assign(input, { eventStreamMarshaller: input.eventStreamSerdeProvider(input) });
