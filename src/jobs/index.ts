import type { TaskList } from 'graphile-worker';

/**
 * Every graphile-worker task, one file each, named `<table>__<action>`. None yet: the foundation runs
 * the worker (schema, polling, shutdown) so later work only adds entries here.
 */
export const taskList: TaskList = {};
