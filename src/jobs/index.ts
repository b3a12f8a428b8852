import type { TaskList } from 'graphile-worker';
import type pg from 'pg';
import { SyncStore } from './sync-store.js';
import { syncsRun, type SyncJobDeps } from './syncs__run.js';

export type JobDeps = SyncJobDeps;

/** Every graphile-worker task, one file each, named `<table>__<action>`; `pool` is the worker's. */
export function createTaskList(deps: JobDeps, pool: pg.Pool): TaskList {
  return {
    syncs__run: syncsRun(deps, new SyncStore(pool)),
  };
}
