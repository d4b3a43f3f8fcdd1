// The newer harness's user-questions service, reduced to how it dispatches:
// dsh-user-questions after 0.1.0-rc.8 dropped registerProvider and asks
// through the 'user-questions/request' waterfall, scoped to the calling agent
// with dsh-scope's scopeTarget, ending in a NO_PROVIDER rejection when no
// answerer accepts (packages/interaction/user-questions/src/index.ts in the
// deepseek-harness sources). It is not on npm yet, so the tests emit the
// event the same way through the REAL cordis, dsh-scope and UserQuestionError.

import { Service } from '@deepseek-ai/cordis'
import { scopeTarget } from '@deepseek-ai/dsh-scope'
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions'

const ABORTED = 'ask_user_question was aborted before the user answered'

function restore (reason) {
  if (reason instanceof UserQuestionError) return reason
  if (reason && typeof reason === 'object' && reason.name === 'UserQuestionError'
    && typeof reason.message === 'string' && typeof reason.code === 'string') {
    return new UserQuestionError(reason.message, reason.code, { cause: reason })
  }
  return reason
}

/** `ctx.userQuestions` of a newer harness: validation, then the scoped answerer waterfall. */
export class WaterfallUserQuestionService extends Service {
  constructor (ctx) {
    super(ctx, 'userQuestions')
  }

  async ask (request) {
    if (request.signal?.aborted) throw new UserQuestionError(ABORTED, 'ASK_ABORTED')
    if (request.questions.length === 0) {
      throw new UserQuestionError('ask_user_question requires at least one question', 'EMPTY_QUESTIONS')
    }
    for (const question of request.questions) {
      const intent = question.intent
      if (intent === undefined) continue
      if (!(question.options ?? []).some((option) => option.label === intent.approve)) {
        throw new UserQuestionError(`question ${question.id} declares intent ${intent.kind} whose approve label `
          + `${JSON.stringify(intent.approve)} names none of its options`, 'BAD_INTENT')
      }
      if (question.detail === undefined) {
        throw new UserQuestionError(`question ${question.id} declares intent ${intent.kind} without the detail it reviews`, 'BAD_INTENT')
      }
    }
    const agent = request.agent
    const noAnswerer = () => Promise.reject(new UserQuestionError(
      'no user-questions answerer accepted the request', 'NO_PROVIDER'))
    try {
      return await (agent === undefined
        ? this.ctx.waterfall('user-questions/request', request, noAnswerer)
        : this.ctx.waterfall(scopeTarget(agent, agent), 'user-questions/request', { ...request, agent }, noAnswerer))
    } catch (error) {
      const restored = restore(error)
      if (restored instanceof UserQuestionError) throw restored
      if (request.signal?.aborted) throw new UserQuestionError(ABORTED, 'ASK_ABORTED', { cause: error })
      throw restored
    }
  }
}

/** An agent as the approval and question services read it: id, and a session log with an open turn. */
export function fakeAgent (id) {
  const session = {
    id,
    events: [{ type: 'turn/start', data: { turn: 1 } }],
    append (type, data) { this.events.push({ type, data }) },
  }
  return { id, session }
}
