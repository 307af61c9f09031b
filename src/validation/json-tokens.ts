import { Tokenizer, TokenParser, TokenType } from '@streamparser/json'
import { printable } from '../printable.js'

export { TokenType }

/** A place in a text: line and column, both from 1; columns count characters, not bytes. */
export interface TextPosition {
  line: number
  column: number
}

/**
 * The position of `bytes[to]`, given that of `bytes[from]`. A line ends at a LF, a CR or a CRLF, as
 * editors count them; `from` and `to` are never between a CR and its LF.
 */
export function positionAfter ({ line, column }: TextPosition, bytes: Buffer, from: number, to: number): TextPosition {
  // Searched within the range, each byte once: a whole array on one line of megabytes has an element every few bytes.
  const range = bytes.subarray(from, to)
  let lineStart = from
  let lf = range.indexOf(LF)
  let cr = range.indexOf(CR)
  while (lf !== -1 || cr !== -1) {
    const atLf = cr === -1 || (lf !== -1 && lf < cr)
    const at = atLf ? lf : cr
    if (atLf) lf = range.indexOf(LF, at + 1)
    else cr = range.indexOf(CR, at + 1)
    // A CRLF's LF ends no line of its own.
    if (!atLf || range[at - 1] !== CR) line++
    column = 1
    lineStart = from + at + 1
  }
  return { line, column: column + charactersIn(bytes, lineStart, to) }
}

const LF = 0x0a
export const CR = 0x0d

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
 * The latest part of a text read in chunks: its bytes from `start` to `end`, the end of the last
 * chunk, and the position of `start`. Chunks are kept as they came, and copied together only when a
 * slice spans them, so that text held across many chunks costs its length once, not once a chunk.
 */
export class TextWindow {
  #pieces: Buffer[] = []
  #start = 0
  #end = 0
  #position: TextPosition = { line: 1, column: 1 }

  get start (): number {
    return this.#start
  }

  get end (): number {
    return this.#end
  }

  push (chunk: Buffer): void {
    this.#pieces.push(chunk)
    this.#end += chunk.length
  }

  /** The bytes from `from` to `to`, both in the window. */
  slice (from: number, to: number): Buffer {
    const parts: Buffer[] = []
    let pieceStart = this.#start
    for (const piece of this.#pieces) {
      const pieceEnd = pieceStart + piece.length
      if (pieceEnd > from && pieceStart < to) parts.push(piece.subarray(Math.max(0, from - pieceStart), Math.min(piece.length, to - pieceStart)))
      pieceStart = pieceEnd
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
  }

  /** The position of byte `offset`, in the window or at its end. */
  positionOf (offset: number): TextPosition {
    return positionAfter(this.#position, this.slice(this.#start, offset), 0, offset - this.#start)
  }

  /** Forgets the bytes before `offset`, in the window, whose position is `position`. */
  dropBefore (offset: number, position: TextPosition): void {
    while (this.#pieces.length > 0 && this.#start + this.#pieces[0]!.length <= offset) this.#start += this.#pieces.shift()!.length
    if (this.#pieces.length > 0) this.#pieces[0] = this.#pieces[0]!.subarray(offset - this.#start)
    this.#start = offset
    this.#position = position
  }
}

// The bytes that may come before a JSON text's first value (whitespace and punctuation), where the
// tokenizer would skip a byte order mark without counting it.
const BEFORE_FIRST_VALUE = new Set([0x20, 0x09, 0x0a, 0x0d, 0x5b, 0x5d, 0x7b, 0x7d, 0x2c, 0x3a])
const BYTE_ORDER_MARK_FIRST_BYTE = 0xef

/**
 * Reads JSON text in chunks with a streaming parser, handing each token and its byte offset to
 * `onToken`; throws JsonSyntaxError at the first fault, naming its line and column (JSON.parse names
 * at most an offset). Each chunk goes into `window`, cut between characters; the reader's owner keeps
 * in it all the text after the last token it was given (a fault may be named at the start of a token
 * read over many chunks) and may forget the rest.
 */
export class JsonTokenReader {
  readonly #tokenizer = new Tokenizer()
  // Only checks the grammar: values are dropped as they end, so memory stays flat.
  readonly #parser = new TokenParser({ paths: ['$.*'], keepStack: false })
  #offset = 0
  #beforeFirstValue = true

  constructor (onToken: (token: TokenType, offset: number) => void, private readonly window = new TextWindow()) {
    this.#parser.onValue = () => {}
    // The parser first: a token out of place is a fault before `onToken` is given it.
    this.#tokenizer.onToken = (info) => {
      this.#offset = info.offset
      this.#parser.write(info)
      onToken(info.token, info.offset)
    }
  }

  write (chunk: Buffer): void {
    const chunkStart = this.window.end
    this.window.push(chunk)
    this.#refuseByteOrderMark(chunk, chunkStart)
    this.#read(() => { this.#tokenizer.write(chunk) })
  }

  end (): void {
    this.#read(() => { this.#tokenizer.end() })
    if (!this.#parser.isEnded) throw this.#incomplete()
  }

  /**
   * The tokenizer skips a byte order mark anywhere before the first value, counting none of its
   * bytes, so that every offset after it is three bytes short: it is refused here instead.
   */
  #refuseByteOrderMark (chunk: Buffer, chunkStart: number): void {
    for (let i = 0; this.#beforeFirstValue && i < chunk.length; i++) {
      if (chunk[i] === BYTE_ORDER_MARK_FIRST_BYTE) throw this.#unexpected(chunkStart + i)
      if (!BEFORE_FIRST_VALUE.has(chunk[i]!)) this.#beforeFirstValue = false
    }
  }

  #read (step: () => void): void {
    try {
      step()
    } catch (error) {
      if (!(error instanceof Error) || !/^(Unexpected|Tokenizer ended)/.test(error.message)) throw error
      // The tokenizer names the byte it stopped at; the parser, the start of the token it was given.
      const at = Number(/absolute position "(\d+)"/.exec(error.message)?.[1] ?? this.#offset)
      if (at >= this.window.end || error.message.startsWith('Tokenizer ended')) throw this.#incomplete()
      throw this.#unexpected(at, EXPECTED[/in state (\w+)/.exec(error.message)?.[1] ?? ''])
    }
  }

  #unexpected (at: number, expected?: string): JsonSyntaxError {
    const found = String.fromCodePoint(this.window.slice(at, Math.min(at + 4, this.window.end)).toString('utf8').codePointAt(0)!)
    // JSON.stringify escapes C0 controls, not DEL, C1 controls, bidi marks nor line separators.
    const shown = found === '\ufeff' ? 'byte order mark (U+FEFF)' : printable(JSON.stringify(found))
    return new JsonSyntaxError(`unexpected ${shown}${expected === undefined ? '' : ` where ${expected} was expected`}`, this.window.positionOf(at))
  }

  #incomplete (): JsonSyntaxError {
    return new JsonSyntaxError('the text ends before the JSON value is complete', this.window.positionOf(this.window.end))
  }
}

/** Reads a whole JSON text with JsonTokenReader. */
export function readJsonTokens (bytes: Buffer, onToken: (token: TokenType, offset: number) => void): void {
  const reader = new JsonTokenReader(onToken)
  reader.write(bytes)
  reader.end()
}
