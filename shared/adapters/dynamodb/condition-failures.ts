import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';

/** The DynamoDB exceptions the repositories translate, named for what they mean. */

/** A single write's condition was false: another write got there first, or the item is not as expected. */
export const isConditionalCheckFailed = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException ||
  (error instanceof Error && error.name === 'ConditionalCheckFailedException');

/** A transaction was canceled because one of its conditions was false (not for a conflict or a throttle). */
export const isCanceledByCondition = (error: unknown): error is TransactionCanceledException =>
  error instanceof TransactionCanceledException &&
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed');

/** DynamoDB refuses an item over its 400 KB limit with a ValidationException that says so. */
export const isItemTooLarge = (error: unknown): boolean =>
  error instanceof Error && error.name === 'ValidationException' && /size/i.test(error.message);
