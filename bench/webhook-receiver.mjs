// The benchmark's webhook receiver, in a process of its own so that the load generator's work does not
// delay it: it answers 204 to every delivery and keeps, for each, the time from the change (the event's
// occurredAt) to its arrival. GET /results answers them all.
import { createServer } from 'node:http'

const latencies = []
const server = createServer((request, response) => {
  let body = ''
  request.setEncoding('utf8')
  request.on('data', (chunk) => { body += chunk })
  request.on('end', () => {
    if (request.method === 'GET') return response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(latencies))
    latencies.push(Date.now() - Date.parse(JSON.parse(body).occurredAt))
    response.writeHead(204).end()
  })
})
server.listen(0, '127.0.0.1', () => { console.log(`listening ${server.address().port}`) })
process.on('SIGTERM', () => { server.close(); server.closeAllConnections() })
