import type { Logger } from './logger.js';

/** Resources stopped in the reverse order they were started. */
export class ShutdownStack {
  private readonly steps: { name: string; stop: () => Promise<unknown> }[] = [];
  logger: Logger | undefined;

  push(name: string, stop: () => Promise<unknown>): void {
    this.steps.push({ name, stop });
  }

  async run(): Promise<void> {
    // Each step runs once, even when a signal arrives during a failed start's own cleanup.
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.stop();
        this.logger?.info({ step: step.name }, 'stopped');
      } catch (error) {
        this.logger?.warn({ step: step.name, err: error }, 'shutdown step failed');
      }
    }
  }
}
