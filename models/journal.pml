/*
 * The candidate journal (packages/protocol/src/recovery/journal.ts, promotion.ts, decide.ts; the
 * appends of plugins/recovery/src/service.ts). See docs/models-checked.md for the step-to-code map.
 *
 * One recovery controller (the recovery lock serializes it per session). It promotes candidates
 * through proposed → verified → committed → receipt, one append at a time; a SIGKILL may come
 * between any two appends. On restart, resume (agent/before-resume) reconciles the journal, and every
 * decision reconciles first too. Every append is checked by the fold (journalViolation): a record
 * that would break the journal is not written (the service throws).
 *
 * Candidates: 0 is authoritative at the start; 1 and 3 pass their checks and descend from it;
 * 2 does not (illegal: REJECT_CANDIDATE / planPromotion refuses it).
 *
 * Bounds (-D): ROUNDS (at most 5, anyOpen lists journals 0..5), CRASHES.
 * Variants (-D): NO_RECONCILE — neither resume nor decide reconciles; NO_LEGALITY — planPromotion
 * promotes whatever candidate the decision names.
 */

#ifndef ROUNDS
#define ROUNDS 4            /* decisions the controller makes */
#endif
#ifndef CRASHES
#define CRASHES 3
#endif
#define J (ROUNDS + 1)       /* journals the log can hold: one per decision at most */
#define C 4                 /* candidates 0..3 */

#define NONE      0
#define PROPOSED  1
#define VERIFIED  2
#define COMMITTED 3
#define ROLLED    4

/* the log, as the fold sees it */
byte stage[J];
byte digest[J];
byte receipt[J];            /* receipts appended for journal j (the fold allows at most one) */
byte journals = 0;
byte authoritative = 0;     /* digest of the last committed journal (state.authoritative) */

bool legal[C];
byte crashes = 0;

/* a journal is open: proposed or verified, or committed without its receipt (isJournalOpen) */
#define OPEN(j) (stage[j] == PROPOSED || stage[j] == VERIFIED || (stage[j] == COMMITTED && receipt[j] == 0))

/* any journal open (computed inside an atomic) */
#define anyOpen() ((0 < journals && OPEN(0)) || (1 < journals && OPEN(1)) || (2 < journals && OPEN(2)) || (3 < journals && OPEN(3)) \
  || (4 < journals && OPEN(4)) || (5 < journals && OPEN(5)))

/* the invariants every reachable log satisfies */
inline invariants() {
  byte k, open = 0;
  for (k : 0 .. J - 1) {
    if :: k < journals && OPEN(k) -> open++ :: else fi;
    assert(receipt[k] <= 1);                            /* at most one receipt per commit */
    assert(receipt[k] == 0 || stage[k] == COMMITTED)    /* a receipt only for a committed journal */
  }
  assert(open <= 1);                                    /* at most one promotion in flight */
  k = 0; open = 0
}

/* append a stage of journal j, as the service does: the fold refuses a violation, nothing is written */
inline appendStage(j, st, c) {
  atomic {
    if
    :: st == PROPOSED && j == journals && journals < J && !anyOpen() ->
       stage[j] = PROPOSED; digest[j] = c; journals++
    :: st == VERIFIED && j < journals && stage[j] == PROPOSED -> stage[j] = VERIFIED
    :: st == COMMITTED && j < journals && stage[j] == VERIFIED ->
       assert(legal[digest[j]]);                        /* nothing illegal is ever promoted */
       stage[j] = COMMITTED; authoritative = digest[j]
    :: st == ROLLED && j < journals && (stage[j] == PROPOSED || stage[j] == VERIFIED) -> stage[j] = ROLLED
    :: else -> refused = true                           /* journalViolation: the append throws */
    fi;
    invariants()
  }
}

inline appendReceipt(j) {
  atomic {
    if
    :: j < journals && stage[j] == COMMITTED && receipt[j] == 0 -> receipt[j]++
    :: else -> refused = true
    fi;
    invariants()
  }
}


/* maybe crash here: at most CRASHES in total; the controller restarts at `resume` */
#define CRASH_POINT  if :: crashes < CRASHES -> crashes++; goto resume :: skip fi

active proctype Controller() {
  byte round = 0, j, c;
  bool refused;
  legal[0] = true; legal[1] = true; legal[3] = true;
resume:
  /* agent/before-resume → Recovery.reconcile → reconcileJournal (journal.ts:106-124) */
#ifndef NO_RECONCILE
  j = 0;
  do
  :: j >= journals -> break
  :: j < journals && (stage[j] == PROPOSED || stage[j] == VERIFIED) ->
     CRASH_POINT; refused = false; appendStage(j, ROLLED, digest[j]); j++
  :: j < journals && stage[j] == COMMITTED && receipt[j] == 0 ->
     CRASH_POINT; refused = false; appendReceipt(j); j++
  :: j < journals && !OPEN(j) -> j++
  od;
#endif
  do
  :: round >= ROUNDS -> break
  :: round < ROUNDS ->
     round++;
     /* the attempt's candidate, as read by the controller (any of them; 2 is illegal) */
     if :: c = 1 :: c = 2 :: c = 3 fi;
     /* decide → planPromotion (promotion.ts:12-38): refuses while a promotion is unfinished
        (after the decision's own reconciliation, already appended above), an illegal candidate,
        and does nothing for the authoritative one */
     if
     :: atomic { anyOpen() } -> goto next                          /* CANDIDATE_ILLEGAL: reconcile first */
#ifndef NO_LEGALITY
     :: atomic { !anyOpen() && !legal[c] } -> goto next            /* REJECT_CANDIDATE */
     :: atomic { !anyOpen() && legal[c] && c == authoritative } -> goto next
     :: atomic { !anyOpen() && legal[c] && c != authoritative } -> skip
#else
     :: atomic { !anyOpen() && c == authoritative } -> goto next
     :: atomic { !anyOpen() && c != authoritative } -> skip
#endif
     fi;
     /* Recovery.appendJournal: promotionRecords (journal.ts:139-147), one append at a time */
     j = journals;
     refused = false;
     CRASH_POINT; appendStage(j, PROPOSED, c);
     if :: refused -> goto next :: else fi;
     CRASH_POINT; appendStage(j, VERIFIED, c);
     if :: refused -> goto next :: else fi;
     CRASH_POINT; appendStage(j, COMMITTED, c);
     if :: refused -> goto next :: else fi;
     CRASH_POINT; appendReceipt(j);
     /* then the decision record (not a journal record) */
     CRASH_POINT;
next:
     skip
  od;
  /* the last resume after the run: a person resumes the task once more */
  if
  :: crashes < CRASHES + 1 -> crashes = CRASHES + 1; round = ROUNDS; goto resume
  :: else
  fi;
  /* end: exactly one authoritative candidate, every commit has exactly one receipt, nothing open */
  for (j : 0 .. J - 1) {
    if
    :: j < journals ->
       assert(!OPEN(j));
       assert(stage[j] != COMMITTED || receipt[j] == 1)
    :: else
    fi
  }
  /* the authoritative candidate is the digest of the last committed journal (or the initial one) */
  c = 0;
  for (j : 0 .. J - 1) {
    if :: j < journals && stage[j] == COMMITTED -> c = digest[j] :: else fi
  }
  assert(authoritative == c);
  assert(legal[authoritative])
}
