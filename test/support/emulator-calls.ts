/** What the emulator tests share: one call over real HTTP, and emulators closed after each test. */

/** A call: its status, headers and body (parsed when JSON, the text otherwise, null when empty); `json` makes it a POST by default. */
export async function call(url: string, init: { method?: string; headers?: Record<string, string>; json?: unknown } = {}) {
  const response = await fetch(url, {
    method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
    headers: { ...(init.json === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
  const text = await response.text();
  const json = (response.headers.get('content-type') ?? '').includes('application/json');
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an emulator's answer, checked field by field by each test (as response.json() gives it)
  const body: any = text === '' ? null : json ? JSON.parse(text) : text;
  return { status: response.status, headers: response.headers, body };
}

/** Emulators a test file starts: `track` one as it starts, `closeAll` in `afterEach`. */
export function emulatorTracker() {
  const started: Array<{ close(): Promise<void> }> = [];
  const track = async <T extends { close(): Promise<void> }>(emulator: Promise<T>): Promise<T> => {
    const e = await emulator;
    started.push(e);
    return e;
  };
  const closeAll = async (): Promise<void> => {
    await Promise.all(started.splice(0).map((emulator) => emulator.close()));
  };
  return { track, closeAll };
}
