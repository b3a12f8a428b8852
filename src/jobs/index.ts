import type { TaskList } from 'graphile-worker';
import { syncsRun, type SyncJobDeps } from './syncs__run.js';

export type JobDeps = SyncJobDeps;

/** Every graphile-worker task, one file each, named `<table>__<action>`. */
export function createTaskList(deps: JobDeps): TaskList {
  return {
    syncs__run: syncsRun(deps),
  };
}
