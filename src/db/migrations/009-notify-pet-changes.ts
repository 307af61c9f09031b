import { sql, type Kysely } from 'kysely'
import { PET_CHANGES_CHANNEL } from '../../store/postgres/change-feed.js'
import { isPostgres } from '../dialect.js'

// On PostgreSQL, every statement that changes pets notifies the instances' read caches when it
// commits (see PostgresChangeFeed), whoever runs it: an instance, the CLI, or psql. SQLite's caches
// read the file's own commit counter instead.
export async function up (db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql.raw(`create function notify_pet_changes() returns trigger language plpgsql as $$
    begin
      perform pg_notify('${PET_CHANGES_CHANNEL}', '');
      return null;
    end $$`).execute(db)
  await sql`create trigger pets_changed after insert or update or delete or truncate on pets
    for each statement execute function notify_pet_changes()`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`drop trigger pets_changed on pets`.execute(db)
  await sql`drop function notify_pet_changes()`.execute(db)
}
