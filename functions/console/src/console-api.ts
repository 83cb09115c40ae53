/**
 * How console pages read and change things: as a client of the product's own API, with the
 * session's access token, through the gateway's whole request path (route table, credential,
 * tenancy, scopes, crypto policy, the family worker, the gateway's cache invalidation after admin
 * changes), reached over the console worker's service binding to the gateway. No page reads the
 * database on its own, so the console can show nothing the API would not show that user, and
 * every change it makes is the API's change (audit entries included).
 */

/** A JSON request as a client sends it, with its declared length. */
export function jsonRequest(url: string, body: unknown, headers: Record<string, string> = {}): Request {
  const text = JSON.stringify(body)
  return new Request(url, {
    method: 'POST',
    headers: {
      ...headers,
      'content-type': 'application/json',
      'content-length': String(new TextEncoder().encode(text).length),
    },
    body: text,
  })
}

/** The gateway's fetch, over the console's service binding (GATEWAY). */
export type Dispatch = (request: Request) => Promise<Response>

export interface ApiError {
  message: string
  type: string
  param: string | null
  code: string
}

export type ApiResult<T> =
  | { ok: true; status: number; body: T; requestId: string | null }
  | { ok: false; status: number; error: ApiError; requestId: string | null; body: unknown }

export interface ConsoleApi {
  get<T>(path: string): Promise<ApiResult<T>>
  send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<ApiResult<T>>
  /** Any request, for a public path (no credential). */
  publicGet<T>(path: string): Promise<ApiResult<T>>
}

async function toResult<T>(res: Response): Promise<ApiResult<T>> {
  const requestId = res.headers.get('x-request-id')
  const text = await res.text()
  let body: unknown = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    body = text
  }
  if (res.ok) return { ok: true, status: res.status, body: body as T, requestId }
  const error = (body as { error?: Partial<ApiError> } | null)?.error
  return {
    ok: false,
    status: res.status,
    requestId,
    body,
    error: {
      message: error?.message ?? `The API answered ${res.status}.`,
      type: error?.type ?? 'api_error',
      param: error?.param ?? null,
      code: error?.code ?? 'unknown',
    },
  }
}

/**
 * A client for one console request. `accessToken()` yields the session's current token (refreshed
 * when it ran out); `onTokenRefused` is asked once when the API refuses it, and may refresh it.
 */
export function consoleApi(options: {
  dispatch: Dispatch
  baseUrl: string
  /**
   * The mode the console's test/live switch chose: sent as `x-svc-mode` with every call made
   * with the person's token, so the pages show (and create) that mode's data.
   */
  mode?: 'test' | 'live'
  accessToken: () => Promise<string>
  refreshAfterRefusal: () => Promise<boolean>
}): ConsoleApi {
  const call = async <T>(
    method: string,
    path: string,
    body: unknown,
    auth: boolean,
  ): Promise<ApiResult<T>> => {
    const attempt = async () => {
      const headers: Record<string, string> = { accept: 'application/json' }
      if (auth) headers.authorization = `Bearer ${await options.accessToken()}`
      if (auth && options.mode) headers['x-svc-mode'] = options.mode
      const text = body === undefined ? undefined : JSON.stringify(body)
      if (text !== undefined) {
        headers['content-type'] = 'application/json'
        // The gateway reads a body only when its length is declared (as every HTTP client does).
        headers['content-length'] = String(new TextEncoder().encode(text).length)
      }
      const request = new Request(`${options.baseUrl}${path}`, {
        method,
        headers,
        ...(text === undefined ? {} : { body: text }),
      })
      return toResult<T>(await options.dispatch(request))
    }
    const first = await attempt()
    // A token the policy now refuses (e.g. the workspace moved to a level-5 preset) or that ran out
    // between the check and the call: one refresh (which picks an allowed algorithm), one retry.
    if (
      auth &&
      !first.ok &&
      (first.status === 401 || first.error.code === 'crypto_policy_violation') &&
      (await options.refreshAfterRefusal())
    ) {
      return attempt()
    }
    return first
  }
  return {
    get: (path) => call('GET', path, undefined, true),
    send: (method, path, body) => call(method, path, body, true),
    publicGet: (path) => call('GET', path, undefined, false),
  }
}
