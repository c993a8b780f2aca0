/**
 * What the Lambda Node.js runtime prints for an error that leaves a handler ("Invoke Error"), in
 * its text and its JSON log format. Copied from the runtime interface client `aws-lambda-ric`
 * 4.0.2 (`index.mjs`: `toFormatted`, `withEnumerableProperties`, `jsonErrorReplacer`;
 * Apache-2.0, Copyright Amazon.com, Inc. or its affiliates), because that package builds a native
 * addon at install and exports none of these: the test reads what the runtime would write.
 */

const FIELD_DELIMITER = '\t';
const LINE_DELIMITER = '\n';

const withEnumerableProperties = (error: unknown): unknown => {
  if (error instanceof Error) {
    const ret: { stack?: unknown } = Object.assign(
      { errorType: error.name, errorMessage: error.message, code: (error as { code?: unknown }).code },
      error,
    );
    if (typeof error.stack === 'string') ret.stack = error.stack.split(LINE_DELIMITER);
    return ret;
  }
  return error;
};

const jsonErrorReplacer = (_key: string, value: unknown): unknown => {
  if (value instanceof Error) {
    return Object.assign(
      {
        errorType: value?.constructor?.name ?? 'UnknownError',
        errorMessage: value.message,
        stackTrace: typeof value.stack === 'string' ? value.stack.split('\n') : value.stack,
      },
      value,
    );
  }
  return value;
};

/** The text format: `console.error('Invoke Error', toFormatted(error))`. */
export const invokeErrorText = (error: Error): string =>
  `Invoke Error ${FIELD_DELIMITER}${JSON.stringify(error, (_key, value) => withEnumerableProperties(value))}`;

/** The JSON format (`AWS_LAMBDA_LOG_FORMAT=JSON`): `console.error(error)` as one JSON line. */
export const invokeErrorJson = (error: Error): string =>
  JSON.stringify({ timestamp: new Date().toISOString(), level: 'ERROR', message: error }, jsonErrorReplacer);
