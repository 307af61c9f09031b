import { Tokenizer, TokenParser, TokenType } from '@streamparser/json'

export { TokenType }

/** A place in a text: line and column, both from 1; columns count characters, not bytes. */
export interface TextPosition {
  line: number
  column: number
}

/**
 * Finds the line and column of byte offsets in a UTF-8 text handed in chunks, each cut between two
 * characters. Offsets are asked in increasing order, each in the latest chunk or at its end: each byte
 * is gone through once, and only the latest chunk is kept, so a text of any size costs no more memory.
 */
export class TextPositions {
  #chunk: Buffer = Buffer.alloc(0)
  #chunkStart = 0
  /** Where #position is: every byte before it is counted. */
  #offset = 0
  #position: TextPosition = { line: 1, column: 1 }

  /** Hands on the text's next bytes, which follow the last chunk's. */
  push (chunk: Buffer): void {
    this.at(this.#chunkStart + this.#chunk.length)
    this.#chunkStart += this.#chunk.length
    this.#chunk = chunk
  }

  /** The position of byte `offset`, in the latest chunk or at its end, and not before the last asked. */
  at (offset: number): TextPosition {
    this.#position = positionAfter(this.#position, this.#chunk, this.#offset - this.#chunkStart, offset - this.#chunkStart)
    this.#offset = offset
    return this.#position
  }
}

/** The position of `bytes[to]`, given that of `bytes[from]`. */
export function positionAfter ({ line, column }: TextPosition, bytes: Buffer, from: number, to: number): TextPosition {
  // Searched within the range: a whole array on one line of megabytes has an element every few bytes.
  const range = bytes.subarray(from, to)
  let lineStart = from
  for (let i = range.indexOf(0x0a); i !== -1; i = range.indexOf(0x0a, i + 1)) {
    line++
    column = 1
    lineStart = from + i + 1
  }
  return { line, column: column + charactersIn(bytes, lineStart, to) }
}

/**
 * How many characters (UTF-16 code units, as a JavaScript string counts them) the UTF-8 bytes from
 * `from` to `to` hold: one a byte that starts a character, two one that starts a 4-byte one.
 */
function charactersIn (bytes: Buffer, from: number, to: number): number {
  let count = 0
  for (let i = from; i < to; i++) {
    const byte = bytes[i]!
    if ((byte & 0xc0) !== 0x80) count += byte >= 0xf0 ? 2 : 1
  }
  return count
}

/** JSON text that is not valid, with where and why, in words a person can act on. */
export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError'

  constructor (readonly problem: string, readonly position: TextPosition) {
    super(`${problem} at line ${position.line}, column ${position.column}`)
  }
}

// What the parser was waiting for, by its state's name, when a token came that does not fit.
const EXPECTED: Record<string, string> = {
  VALUE: 'a value',
  KEY: 'a field name in double quotes',
  COLON: 'a ":"',
  COMMA: 'a "," or a closing bracket',
  ENDED: 'the end of the text'
}

/**
 * Reads JSON text in chunks with a streaming parser, handing each token and its byte offset to
 * `onToken`; throws JsonSyntaxError at the first fault, naming its line and column (JSON.parse names
 * at most an offset). Chunks are cut between characters, and `positions` is handed each of them
 * before it is written here.
 */
export class JsonTokenReader {
  readonly #tokenizer = new Tokenizer()
  // Only checks the grammar: values are dropped as they end, so memory stays flat.
  readonly #parser = new TokenParser({ paths: ['$.*'], keepStack: false })
  #chunk: Buffer = Buffer.alloc(0)
  #chunkStart = 0
  #offset = 0

  constructor (onToken: (token: TokenType, offset: number) => void, private readonly positions: TextPositions) {
    this.#parser.onValue = () => {}
    // The parser first: a token out of place is a fault before `onToken` is given it.
    this.#tokenizer.onToken = (info) => {
      this.#offset = info.offset
      this.#parser.write(info)
      onToken(info.token, info.offset)
    }
  }

  write (chunk: Buffer): void {
    this.#chunkStart += this.#chunk.length
    this.#chunk = chunk
    this.#read(() => { this.#tokenizer.write(chunk) })
  }

  end (): void {
    this.#read(() => { this.#tokenizer.end() })
    if (!this.#parser.isEnded) throw this.#incomplete()
  }

  #read (step: () => void): void {
    try {
      step()
    } catch (error) {
      if (!(error instanceof Error) || !/^(Unexpected|Tokenizer ended)/.test(error.message)) throw error
      // The tokenizer names the byte it stopped at; the parser stops at the token it was given.
      const at = Number(/absolute position "(\d+)"/.exec(error.message)?.[1] ?? this.#offset)
      const end = this.#chunkStart + this.#chunk.length
      if (at >= end || error.message.startsWith('Tokenizer ended')) throw this.#incomplete()
      const expected = EXPECTED[/in state (\w+)/.exec(error.message)?.[1] ?? '']
      const found = String.fromCodePoint(this.#chunk.toString('utf8', at - this.#chunkStart, at - this.#chunkStart + 4).codePointAt(0)!)
      throw new JsonSyntaxError(`unexpected ${JSON.stringify(found)}${expected === undefined ? '' : ` where ${expected} was expected`}`, this.positions.at(at))
    }
  }

  #incomplete (): JsonSyntaxError {
    return new JsonSyntaxError('the text ends before the JSON value is complete', this.positions.at(this.#chunkStart + this.#chunk.length))
  }
}

/** Reads a whole JSON text with JsonTokenReader. */
export function readJsonTokens (bytes: Buffer, onToken: (token: TokenType, offset: number) => void): void {
  const positions = new TextPositions()
  positions.push(bytes)
  const reader = new JsonTokenReader(onToken, positions)
  reader.write(bytes)
  reader.end()
}
