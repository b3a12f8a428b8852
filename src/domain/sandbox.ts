/**
 * The sandbox's own URLs (SANDBOX): the one exception to the outbound rules, so the demo's every path
 * works on a laptop. Pure.
 */

/** Whether `url` is one of the sandbox's systems at `origin` (the service's own, `<BASE_URL>/sandbox/...`). */
export function isSandboxUrl(url: string, origin: string | undefined): boolean {
  if (!origin || !URL.canParse(url)) return false;
  const parsed = new URL(url);
  return parsed.origin === origin && parsed.pathname.startsWith('/sandbox/');
}
