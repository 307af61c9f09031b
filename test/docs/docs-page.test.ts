import assert from 'node:assert/strict'
import { existsSync, mkdirSync } from 'node:fs'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { build, defer } from '../helper.js'

// Debian's Chromium: playwright cannot download browsers here. `.ci/run` installs it and sets
// BROWSER_TEST_REQUIRED, so in CI a missing browser fails instead of skipping.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const noBrowser = !existsSync(CHROMIUM) && process.env.BROWSER_TEST_REQUIRED === undefined
const SCREENSHOT = 'test-results/docs.png'

test('a real browser renders /docs from /v1/openapi.json: the operations, the named schemas, getPet deprecated, orders experimental, categories, events and webhooks beta, offline', {
  skip: noBrowser ? `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)` : false,
  timeout: 60_000
}, async (t) => {
  const { app } = await build(t)
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
  })
  defer(t, () => browser.close())
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } })
  const problems: string[] = []
  const foreignRequests: string[] = []
  const documentsRead: string[] = []
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
  page.on('request', (request) => {
    const url = request.url()
    if (!url.startsWith(origin) && !url.startsWith('data:')) foreignRequests.push(url)
    if (/json$/.test(url)) documentsRead.push(url.slice(origin.length))
  })

  const response = await page.goto(`${origin}/docs`)
  assert.equal(response?.status(), 200)
  await page.locator('.opblock').first().waitFor({ timeout: 20_000 })

  assert.deepEqual(documentsRead, ['/v1/openapi.json'], 'the page reads the document the README names')
  assert.match(await page.locator('.info .url').innerText(), /\/v1\/openapi\.json$/, 'and links it')
  for (const operation of ['listPets', 'createPet', 'getPet', 'listPets-head', 'getPet-head']) {
    assert.equal(await page.locator(`#operations-pets-${operation}`).count(), 1, `${operation} is listed`)
  }
  const getPet = page.locator('#operations-pets-getPet')
  assert.match(await getPet.getAttribute('class') ?? '', /opblock-deprecated/)
  assert.match(await getPet.innerText(), /removed on 5 December 2030/)
  assert.equal(await page.locator('.opblock-deprecated').count(), 2, 'only getPet (and its HEAD) is deprecated')
  const schemas = await page.locator('section.models .json-schema-2020-12__title').allInnerTexts()
  assert.deepEqual(schemas.sort(), [
    'Category', 'CreatedWebhook', 'Error', 'Event', 'NewCategory', 'NewOrder', 'NewPet', 'NewWebhook', 'Order', 'OrderStatus', 'Pet', 'PetStatus',
    'RetryQueued', 'RotatedSecret', 'Webhook', 'WebhookChanges', 'WebhookDelivery'
  ], 'the named schemas are shown')
  assert.equal(await page.locator('.btn.authorize').count(), 1, 'the bearer scheme offers Authorize')
  for (const operation of ['createOrder', 'listOrders', 'getOrder', 'updateOrderStatus']) {
    const block = page.locator(`#operations-store-${operation}`)
    assert.match(await block.innerText(), /\(experimental\)/, `${operation} is marked experimental`)
  }
  assert.match(await page.locator('#operations-tag-store').innerText(), /Experimental/)
  for (const operation of ['createCategory', 'listCategories', 'getCategory']) {
    assert.match(await page.locator(`#operations-categories-${operation}`).innerText(), /\(beta\)/, `${operation} is marked beta`)
  }
  assert.match(await page.locator('#operations-tag-categories').innerText(), /Beta/)
  assert.match(await page.locator('#operations-events-listEvents').innerText(), /\(beta\)/, 'listEvents is marked beta')
  for (const operation of ['createWebhook', 'listWebhooks', 'getWebhook', 'updateWebhook', 'deleteWebhook', 'rotateWebhookSecret', 'listWebhookDeliveries', 'retryWebhookDelivery']) {
    assert.match(await page.locator(`#operations-webhooks-${operation}`).innerText(), /\(beta\)/, `${operation} is marked beta`)
  }
  assert.match(await page.locator('#operations-tag-webhooks').innerText(), /Beta/)
  assert.match(await page.locator('.information-container').innerText(), /pet_not_available/, 'the error table is shown')

  // An operation opened: its example body and responses are shown.
  await getPet.locator('.opblock-summary').click()
  await getPet.locator('.responses-table').first().waitFor()
  assert.match(await getPet.innerText(), /"name": "Rex"/)
  assert.match(await getPet.innerText(), /Use GET \/pets \(listPets\) with the status filter instead/, 'its description names the replacement')
  assert.match(await getPet.innerText(), /Requires an API key with the scope pets:read\./, 'and the scope it needs')

  mkdirSync('test-results', { recursive: true })
  await page.screenshot({ path: SCREENSHOT, fullPage: true })
  assert.deepEqual(problems, [])
  assert.deepEqual(foreignRequests, [], 'everything the page loads comes from the service')
})
