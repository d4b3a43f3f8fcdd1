/**
 * askbridge as the DeepSeek Harness's answerer: a cordis plugin that hands
 * `ask_user_question` and tool approvals to an askbridge server (Slack,
 * Discord, the answer API) and hands the person's answer back to the agent.
 *
 * @module @askbridge/dsh
 */
import type { Context } from '@deepseek-ai/cordis'
import type { AskUserQuestionAnswer, AskUserQuestionRequest } from '@deepseek-ai/dsh-user-questions'
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions'

export { UserQuestionError }

/** Plugin config. Every key is optional; any other key fails the plugin's load (a TypeError naming it). */
export interface Config {
  /** Base URL of the bridge. Default: `$ASKBRIDGE_URL`, else `$BRIDGE_SERVER`, else `http://127.0.0.1:8080`. */
  url?: string
  /** Bearer token with the `ask` scope. Default: `$ASKBRIDGE_TOKEN`, else `$BRIDGE_TOKEN`; none for an open bridge on loopback. */
  token?: string
  /** The bridge route to post to; default the bridge's `default` route. */
  route?: string
  /** How long a request stays answerable on the bridge (a Go duration such as `"30m"`, or seconds, at most 1e9); default the route's. */
  expiresIn?: string | number
  /** `caller.name` shown to the people who answer. Default `"dsh"`. */
  caller?: string
  /** Seconds each long-poll asks the bridge to hold the call (the bridge caps it at `store.max_wait`). Default 25. */
  pollWait?: number
  /** Seconds of failing calls (bridge restarting, network) tolerated while waiting before giving up. Default 60. */
  retryFor?: number
  /** Seconds a call that does not long-poll may take. Default 15. */
  timeout?: number
  /** Answer `ask_user_question`. Default true. */
  questions?: boolean
  /** Answer `approval/request`. Default true. */
  approvals?: boolean
}

/** The config with its defaults filled in. */
export interface ResolvedConfig {
  url: string
  token: string
  /** Where token came from (`config.token`, `$ASKBRIDGE_TOKEN` or `$BRIDGE_TOKEN`), for errors that name it; never the token. */
  tokenFrom?: string
  route?: string
  expiresIn?: string | number
  caller: string
  pollWait: number
  retryFor: number
  timeout: number
  questions: boolean
  approvals: boolean
}

/** Approval outcomes this plugin returns; the host owns `cancelled` and `unavailable`. */
export type AskbridgeApprovalOutcome = 'allowed-once' | 'rejected'

/** The `approval/request` fields this plugin reads. */
export interface AskbridgeApprovalRequest {
  agent?: { id?: unknown; session?: { id?: unknown } }
  toolName: string
  callId?: string
  reason?: string
  displayReason?: string
  arguments?: Record<string, unknown>
  signal?: AbortSignal
}

/** A newer harness's question request: the rc.8 request plus call ids. */
export interface AskbridgeQuestionRequest extends AskUserQuestionRequest {
  callId?: string
  wait?: { callId?: string; timed?: boolean }
}

/**
 * The seam error codes this plugin rejects questions with (as
 * `UserQuestionError`): `ASK_ABORTED`, `ASK_CANCELLED`, `ASK_TIMED_OUT`,
 * `NO_PROVIDER`, the bridge's validation codes `EMPTY_QUESTIONS`,
 * `BAD_INTENT`, `INVALID_REQUEST`, `DELEGATED_CALLER`, and its own
 * `ASKBRIDGE_UNREACHABLE` and `ASKBRIDGE_ERROR`.
 */
export type AskbridgeErrorCode =
  | 'ASK_ABORTED' | 'ASK_CANCELLED' | 'ASK_TIMED_OUT' | 'NO_PROVIDER'
  | 'EMPTY_QUESTIONS' | 'BAD_INTENT' | 'INVALID_REQUEST' | 'DELEGATED_CALLER'
  | 'ASKBRIDGE_UNREACHABLE' | 'ASKBRIDGE_ERROR'

/** An approval that could not be decided through the bridge (the host fails it closed). */
export declare class AskbridgeError extends Error {
  constructor(message: string, code: string, options?: ErrorOptions)
  code: string
  /** HTTP status of the bridge's answer, when it answered with an error. */
  status?: number
  /** The bridge's own error code (e.g. `UNAUTHORIZED`), when it answered with one. */
  bridgeCode?: string
}

/** The seam's own messages, verbatim, by code. */
export declare const SEAM_MESSAGES: Readonly<{
  EMPTY_QUESTIONS: string
  DELEGATED_CALLER: string
  NO_PROVIDER: string
  ASK_ABORTED: string
  ASK_CANCELLED: string
  ASK_TIMED_OUT: string
}>

/** The plugin's name: `"askbridge"`. */
export declare const name: 'askbridge'

/**
 * Install askbridge as the answerer: the `userQuestions` provider with
 * dsh-user-questions 0.1.0-rc.8, first in the `user-questions/request`
 * waterfall with newer harnesses, and first in `approval/request`.
 */
export declare function apply(ctx: Context, config?: Config): void

/** Validate a config and fill in its defaults; throws TypeError on a bad key. */
export declare function resolveConfig(config?: Config): ResolvedConfig

/** The call id a request carries (`callId`, `wait.callId` or a question's `intent.callId`), if any. */
export declare function callIdOf(request: unknown): string | undefined

/** The answerer behind the plugin, for hosts that wire it up themselves. */
export declare class Answerer {
  constructor(options: ResolvedConfig, logger?: { debug(...a: unknown[]): void; warn(...a: unknown[]): void })
  /** Provider API: the answer, or a rejection with the seam's error (NO_PROVIDER included). */
  ask(request: AskbridgeQuestionRequest): Promise<AskUserQuestionAnswer>
  /** Waterfall: the answer, or `next()` when no answerer on the bridge takes the question. */
  askOrNext(request: AskbridgeQuestionRequest, next: () => Promise<AskUserQuestionAnswer>): Promise<AskUserQuestionAnswer>
  /** Waterfall: the person's decision, or `next()` when no answerer on the bridge takes it. */
  approve<T>(request: AskbridgeApprovalRequest, next: () => Promise<T>): Promise<AskbridgeApprovalOutcome | T>
  /**
   * Stop every wait; each rejects with ASK_ABORTED. A request under its call
   * id stays pending for a restarted agent to re-attach to; one under a fresh
   * tool_call_id, which nothing could find again, is withdrawn. Resolves
   * once the withdrawals on their way have ended, or after 5 s.
   */
  close(): Promise<void>
}

declare const plugin: {
  name: 'askbridge'
  apply: typeof apply
}
export default plugin
