import { ApiError } from '../errors.js'
import { withoutSecrets } from '../without-secrets.js'
import { checkedAddresses, RefusedAddressError, type WebhookNetwork } from './webhook-transport.js'
import { MAX_WEBHOOK_URL_LENGTH } from './webhook.schemas.js'

// A registration waits this long for the receiver's name to resolve; past it, the check at each
// connection is the one that counts.
const RESOLVE_TIMEOUT_MS = 2000

function refused (reason: string): ApiError {
  return new ApiError(422, 'webhook_url_refused', `The webhook URL is refused: ${reason}`)
}

/**
 * Checks a receiver's URL when it is registered or changed: absolute, `https` (or `http` where private
 * addresses are allowed), without credentials, port 0 or fragment, and not naming or resolving to a non-public address;
 * answers it as parsed, the form stored. A name that does not resolve now is accepted: every
 * connection checks the address it dials anyway.
 */
export async function checkWebhookUrl (text: string, network: WebhookNetwork, allowPrivate: boolean): Promise<string> {
  if (!URL.canParse(text)) throw refused('it is not an absolute URL')
  const url = new URL(text)
  const schemes = allowPrivate ? ['https:', 'http:'] : ['https:']
  if (!schemes.includes(url.protocol)) {
    // Named back only where read as a scheme with a host after it: in `user:password@host` (no `//`) it is a user name.
    const named = url.href.startsWith(`${url.protocol}//`) ? `not ${url.protocol.slice(0, -1)}` : 'which it does not start with'
    throw refused(`it must use ${allowPrivate ? 'https or http' : 'https'}, ${named}`)
  }
  if (url.username !== '' || url.password !== '') throw refused('it must not hold a user name or password')
  if (url.port === '0') throw refused('its port must be from 1 to 65535')
  // `hash` is empty for an empty fragment too, where the text still ends in `#`.
  if (url.href.includes('#')) throw refused(`it must not hold a fragment (${withoutSecrets(url.hash).slice(0, 64) || '#'}), which is never sent`)
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
    throw refused(`it is ${url.href.length.toLocaleString('en')} characters once parsed (non-ASCII characters percent-encoded, as it is stored and sent); ` +
      `at most ${MAX_WEBHOOK_URL_LENGTH.toLocaleString('en')} are taken`)
  }
  if (allowPrivate) return url.href
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<void>((resolve) => { timer = setTimeout(resolve, RESOLVE_TIMEOUT_MS) })
  try {
    await Promise.race([checkedAddresses(network, url.hostname, false), timedOut])
  } catch (error) {
    if (error instanceof RefusedAddressError) throw refused(`${error.message}; webhooks reach public addresses only`)
  } finally {
    clearTimeout(timer)
  }
  return url.href
}
