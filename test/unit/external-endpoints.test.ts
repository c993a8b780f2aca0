import { describe, expect, it } from 'vitest';
import { externalEndpoints } from '../../infra/local/local-stack.ts';

/** How `npm start` reads endpoints started elsewhere (decision 0056). */
describe('externalEndpoints', () => {
  it('is undefined when no endpoint variable is set: the embedded emulators start', () => {
    expect(externalEndpoints({})).toBeUndefined();
    expect(externalEndpoints({ AWS_ENDPOINT_URL: '' })).toBeUndefined();
  });

  it('takes AWS_ENDPOINT_URL for every service (LocalStack)', () => {
    const url = 'http://localhost:4566';
    expect(externalEndpoints({ AWS_ENDPOINT_URL: url })).toEqual({
      dynamodb: url,
      dynamodbStreams: url,
      sqs: url,
      kms: url,
    });
  });

  it('prefers each service’s own variable; streams default to the DynamoDB endpoint', () => {
    const env = {
      AWS_ENDPOINT_URL: 'http://shared',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb',
      AWS_ENDPOINT_URL_KMS: 'http://kms',
    };
    expect(externalEndpoints(env)).toEqual({
      dynamodb: 'http://ddb',
      dynamodbStreams: 'http://ddb',
      sqs: 'http://shared',
      kms: 'http://kms',
    });
    expect(
      externalEndpoints({
        AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb',
        AWS_ENDPOINT_URL_DYNAMODB_STREAMS: 'http://streams',
        AWS_ENDPOINT_URL_SQS: 'http://sqs',
        AWS_ENDPOINT_URL_KMS: 'http://kms',
      }),
    ).toEqual({
      dynamodb: 'http://ddb',
      dynamodbStreams: 'http://streams',
      sqs: 'http://sqs',
      kms: 'http://kms',
    });
  });

  it('refuses some services without the others, naming what is missing', () => {
    expect(() => externalEndpoints({ AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb' })).toThrow(
      /AWS_ENDPOINT_URL_DYNAMODB set, but not AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_KMS/,
    );
  });
});
