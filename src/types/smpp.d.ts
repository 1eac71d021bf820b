// The `smpp` package (farhadi/node-smpp) ships no types: the part of it dropline uses, as its
// source (lib/smpp.js, lib/pdu.js, lib/defs.js of 0.5.x) behaves.
declare module 'smpp' {
  import type { EventEmitter } from 'node:events';
  import type { Socket } from 'node:net';

  /**
   * One PDU. Its fields are properties named as in SMPP 3.4 (`system_id`, `short_message`…).
   * Decoded text fields (`short_message`, `message_payload`) are `{ message, udh? }`, `message`
   * text when the library knows the data_coding (0 GSM 03.38, 3 Latin-1, 8 UCS-2…) and a Buffer
   * otherwise.
   */
  interface PDU {
    command: string;
    command_id: number;
    command_status: number;
    sequence_number: number;
    [field: string]: unknown;
    isResponse(): boolean;
    /** The response PDU of this request, with its sequence number (generic_nack for an unknown command). */
    response(options?: Record<string, unknown>): PDU;
    toBuffer(): Buffer;
  }

  interface PDUConstructor {
    new (command: string, options?: Record<string, unknown>): PDU;
    /** Larger PDUs make the reading session emit 'error' (default 16384). */
    maxLength: number;
  }

  /**
   * A connection: over `options.socket` (server side), or connecting with `net.connect(options)`
   * (`tls.connect` when `options.tls`). Events: every PDU as 'pdu' and as its command name,
   * 'connect', 'secureConnect', 'close', 'error' (socket errors and unreadable PDUs).
   */
  interface Session extends EventEmitter {
    socket: Socket;
    /** false when the socket is not writable (nothing sent, the callback never called). */
    send(pdu: PDU, responseCallback?: (pdu: PDU) => void, sendCallback?: (pdu: PDU) => void): boolean;
    close(callback?: () => void): void;
    destroy(callback?: () => void): void;
    pause(): void;
    resume(): void;
  }

  interface SessionConstructor {
    new (options: Record<string, unknown>): Session;
  }

  interface Encoding {
    match(value: string): boolean;
    encode(value: string): Buffer;
    decode(value: Buffer): string;
  }

  type CommandStatus =
    | 'ESME_ROK'
    | 'ESME_RINVCMDID'
    | 'ESME_RINVBNDSTS'
    | 'ESME_RALYBND'
    | 'ESME_RSYSERR'
    | 'ESME_RBINDFAIL'
    | 'ESME_RINVPASWD'
    | 'ESME_RINVSYSID'
    | 'ESME_RTHROTTLED'
    | 'ESME_RX_T_APPN'
    | 'ESME_RX_P_APPN'
    | 'ESME_RX_R_APPN';

  interface Smpp {
    PDU: PDUConstructor;
    Session: SessionConstructor;
    connect(options: Record<string, unknown>, listener?: () => void): Session;
    /** Command status names (ESME_ROK, ESME_RBINDFAIL…) to their values. */
    errors: Record<string, number> & Record<CommandStatus, number>;
    /** GSM 03.38, one septet per octet (unpacked), with the escape table of `encoding` (0: none). */
    gsmCoder: {
      encode(value: string, encoding: number): Buffer;
      decode(value: Buffer, encoding: number): string;
    };
    encodings: { ASCII: Encoding; LATIN1: Encoding; UCS2: Encoding };
  }

  const smpp: Smpp;

  export type { PDU, Session };
  export default smpp;
}
