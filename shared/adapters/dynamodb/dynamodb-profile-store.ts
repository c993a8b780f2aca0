import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ProfileStore, StoredProfile } from '../../domain/operations.ts';
import { DynamoDbSavedProfiles, fromProfileItem } from './dynamodb-saved-profiles.ts';
import { type ProfileItem, profileItemSchema } from './entities.ts';
import { keys } from './keys.ts';

/**
 * Saved profiles in the state table's `PROFILES` partition (docs/operations.md, "Saved profiles"): the admin
 * command's side.
 */
export class DynamoDbProfileStore extends DynamoDbSavedProfiles implements ProfileStore {
  async put(profile: StoredProfile): Promise<void> {
    const item: ProfileItem = {
      ...keys.profile(profile.profileId),
      profileId: profile.profileId,
      profile: profile.profile as ProfileItem['profile'],
      updatedAt: profile.updatedAt,
    };
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: item }));
  }

  async get(profileId: string): Promise<StoredProfile | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.profile(profileId), ConsistentRead: true }),
    );
    return Item ? fromProfileItem(profileItemSchema.parse(Item)) : undefined;
  }

  async delete(profileId: string): Promise<boolean> {
    const { Attributes } = await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: keys.profile(profileId), ReturnValues: 'ALL_OLD' }),
    );
    return Attributes !== undefined;
  }
}
