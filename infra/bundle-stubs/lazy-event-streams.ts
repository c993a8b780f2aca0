/**
 * `@smithy/core/event-streams` in the bundles of the functions that stream model turns
 * (`EVENT_STREAM_ENTRIES` of infra/bundling.ts: the executor). The parts that read schemas stay in
 * the bundle: `EventStreamSerde` (it reads the service's error registry, which must be the
 * bundle's own copy) and the config resolver. The binary event-stream codec, which only a streamed
 * turn runs, loads on the first streamed response from `event-streams.mjs`, a bundle of the real
 * module CDK writes beside the function's (`EVENT_STREAMS_BUNDLE`), so a function that never
 * streams never loads it and its bundle stays within MAX_BUNDLE_BYTES.
 */
import { Readable } from 'node:stream';
import type * as RealEventStreams from '@smithy/core/event-streams';

// The real EventStreamSerde, by an alias infra/bundling.ts sets (its own name, so the alias of
// `@smithy/core/event-streams` to this file does not apply to it).
export { EventStreamSerde } from 'a2a-real-event-stream-serde';

// What the Bedrock client's WebSocket middleware imports: only an operation with an event-stream
// input over a WebSocket (InvokeModelWithBidirectionalStream) runs it, and no function calls one,
// so these stay the stand-ins that throw.
export {
  EventStreamCodec,
  iterableToReadableStream,
  readableStreamToIterable,
} from './smithy-event-streams.ts';

type Marshaller = ReturnType<typeof RealEventStreams.eventStreamSerdeProvider>;
type MarshallerOptions = Parameters<typeof RealEventStreams.eventStreamSerdeProvider>[0];

/** The codec's own bundle file, beside the function's; a path that is not a literal, so esbuild leaves the import as it is. */
const EVENT_STREAMS_FILE: string = './event-streams.mjs';

let codec: Promise<typeof RealEventStreams> | undefined;
const loadCodec = (): Promise<typeof RealEventStreams> => {
  codec ??= import(EVENT_STREAMS_FILE) as Promise<typeof RealEventStreams>;
  return codec;
};

/**
 * The marshaller a client keeps in its config: it is built when the client is constructed and
 * loads the real one when a response (or request) first carries an event stream.
 */
class LazyEventStreamMarshaller {
  private real: Promise<Marshaller> | undefined;

  constructor(private readonly options: MarshallerOptions) {}

  private load(): Promise<Marshaller> {
    this.real ??= loadCodec().then(({ eventStreamSerdeProvider }) => eventStreamSerdeProvider(this.options));
    return this.real;
  }

  deserialize<T>(
    body: Parameters<Marshaller['deserialize']>[0],
    deserializer: (input: Record<string, unknown>) => Promise<T>,
  ): AsyncIterable<T> {
    const marshaller = this.load();
    return {
      async *[Symbol.asyncIterator]() {
        yield* (await marshaller).deserialize(body, deserializer as never) as AsyncIterable<T>;
      },
    };
  }

  serialize<T>(input: AsyncIterable<T>, serializer: (event: T) => unknown): Readable {
    const marshaller = this.load();
    return Readable.from(
      (async function* () {
        yield* (await marshaller).serialize(input, serializer as never) as AsyncIterable<unknown>;
      })(),
    );
  }
}

export const eventStreamSerdeProvider = (options: MarshallerOptions) =>
  new LazyEventStreamMarshaller(options);

/** As the real resolver: the client's config gets the provider's marshaller. */
export const resolveEventStreamSerdeConfig = <T extends { eventStreamSerdeProvider: (input: T) => unknown }>(
  input: T,
) => Object.assign(input, { eventStreamMarshaller: input.eventStreamSerdeProvider(input) });
