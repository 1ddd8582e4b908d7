// Keeps signaling in order through the link key's HMACs, both ways (issue 19). WebCrypto is asynchronous, so an
// offer waiting for its `auth` must hold back everything sent after it (an ICE candidate never overtakes its
// offer), and a received offer waiting for its check must hold back the messages after it from the engine.
//
// Each step settles on its own: a message that cannot be signed or checked is dropped alone and never turns the
// ones queued after it into a false interception or an unsigned send. A message belongs to the signaling link it
// was queued on; once that link is replaced it is lost with it, as a send on a dying socket is.
//
// Pure of the browser: DuetCall gives it its SignedSignaling, the current link's generation, and where messages go.
// Its behaviour is checked in node (Tests/web/signed-message-order.test.mjs).
export class SignedMessageOrder {
  /**
   * signing: a SignedSignaling (needsSigning, context, sign, needsCheck, check).
   * currentGeneration: () => the generation of the signaling link in use now.
   */
  constructor(signing, currentGeneration, warn = (...args) => console.warn(...args)) {
    this.signing = signing;
    this.currentGeneration = currentGeneration;
    this.warn = warn;
    this.sendChain = Promise.resolve();
    this.sendsPending = 0;
    this.receiveChain = Promise.resolve();
    this.checksPending = 0;
  }

  /** Settles once every send queued so far has gone out or been dropped (for the goodbye flush). */
  get sendsSettled() { return this.sendChain; }

  /** `send(envelope)` the engine's envelope, signed when it needs to be, after every envelope queued before it. */
  outgoing(envelope, send) {
    if (!this.signing.needsSigning(envelope) && this.sendsPending === 0) return send(envelope);
    const context = this.signing.context();  // who is who now: the engine may forget it before the HMAC is done
    const generation = this.currentGeneration();
    this.sendsPending += 1;
    this.sendChain = this.sendChain.then(async () => {
      try {
        let signed = envelope;
        if (this.signing.needsSigning(envelope)) {
          // Unsigned it would end the call as intercepted at the other side: lost instead, as on a dying link
          // (the offer timeout and the recovery ladder send it again).
          try {
            signed = await this.signing.sign(envelope, context);
          } catch (error) {
            this.warn(`a ${envelope.type} could not be signed`, error);
            return;
          }
          if (signed == null) {
            this.warn(`a ${envelope.type} could not be signed: nobody to send it to yet`);
            return;
          }
        }
        if (generation === this.currentGeneration()) send(signed);
      } catch (error) {
        this.warn('send failed', error);
      } finally {
        this.sendsPending -= 1;
      }
    });
  }

  /**
   * `feed(input)` what a received envelope means for the engine, after every envelope received before it:
   * `{type: 'message'}` when it passes (or needs no check), `{type: 'descriptionRejected'}` for an offer or answer
   * the key does not vouch for, nothing for a `verify_failed` nobody with the key wrote. `generation`: the link it
   * came on.
   */
  incoming(envelope, generation, feed) {
    if (!this.signing.needsCheck(envelope) && this.checksPending === 0) return feed({ type: 'message', envelope });
    this.checksPending += 1;
    this.receiveChain = this.receiveChain.then(async () => {
      try {
        // Checked when its turn comes, so who is who reflects every message before it.
        let verdict = 'pass';
        if (this.signing.needsCheck(envelope)) {
          try {
            verdict = await this.signing.check(envelope);
          } catch (error) {
            // A check that could not run proves nothing: dropped, never taken for an interception.
            this.warn(`a ${envelope.type} could not be checked`, error);
            return;
          }
        }
        if (generation !== this.currentGeneration()) return;
        if (verdict === 'pass') return feed({ type: 'message', envelope });
        if (verdict === 'rejected') {
          this.warn(`a ${envelope.type} failed its check against the link's key`);
          return feed({ type: 'descriptionRejected', envelope });
        }
        this.warn(`a ${envelope.type} not signed for us with the link's key was ignored`);
      } catch (error) {
        this.warn('message failed', error);
      } finally {
        this.checksPending -= 1;
      }
    });
  }
}
