/*
 * The repair confirm protocol (plugins/repair/src/confirm.ts) against one shared store.
 * See docs/models-checked.md for the step-to-code map and what is abstracted away.
 *
 * Two hosts share one session log (MySQL). Each host runs N Confirm clicks; a click takes its host's
 * maintenance window (runMaintenance + the repair lock: per host, in memory, so it does NOT exclude
 * the other host) and writes through the seq-exact transact (read at seq s, decide, append only at
 * exactly seq s, else decide again: TRANSACT_ATTEMPTS). Meanwhile a user declines, or a new proposal
 * supersedes the pending one. A SIGKILL may hit either host between any two steps (every store
 * write is atomic; in-memory locks die with the host); the host restarts and later clicks run on it.
 * At the end one more click (a person clicking again after the crashes) runs on a live host.
 *
 * Bounds (-D): HOSTS (2), CLICKS per host, CRASHES, ATTEMPTS; WITHOUT_USER leaves out the Decline
 * and the superseding proposal (to afford more clicks). Variants (-D): NO_SEQ_CHECK — transact appends whatever it decided on its (possibly stale)
 * snapshot; NO_RECHECK — the window does not re-read the state before writing the reopen;
 * CONFIRMED_IS_APPLIED — a click that finds the receipt answers already-applied (never finishes).
 */

#ifndef HOSTS
#define HOSTS 2
#endif
#ifndef CLICKS
#define CLICKS 2          /* clicks per host */
#endif
#ifndef CRASHES
#define CRASHES 1         /* SIGKILLs in total */
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 2        /* transact retries before SEQ_CONFLICT (the code has 5) */
#endif
#define P 2               /* proposals: p0 exists at start, p1 may be proposed meanwhile */

/* proposal status, derived by the projection from the records */
#define NONE       0
#define PENDING    1
#define CONFIRMED  2      /* receipt written, reopen not yet */
#define APPLIED    3
#define DECLINED   4
#define SUPERSEDED 5

#define COMPLETE 0
#define ACTIVE   1

/* the store: the session log as the projection folds it */
byte seq = 1;
byte status[P];
byte propRev[P];
byte phase = COMPLETE;
byte rev = 1;

/* ghosts: what was ever written */
byte receipts[P];
byte reopens[P];
bool everFinal[P];     /* declined or superseded at some point */

/* per host: epoch (bumped by a SIGKILL) and the maintenance window/lock */
byte epoch[HOSTS];
bool window[HOSTS];
byte crashes = 0;
byte running = 0;      /* clicks, proposer and decliner not finished */

/* confirmDecision over a snapshot: 0 stale, 1 applied, 2 reopen-with-receipt, 3 reopen-without */
#define DECIDE(st, ph, rv, p) \
  ((st) == APPLIED -> 1 : \
  (((ph) != COMPLETE || (rv) != propRev[p] || ((st) != PENDING && (st) != CONFIRMED)) -> 0 : \
  ((st) == PENDING -> 2 : 3)))

#ifdef CONFIRMED_IS_APPLIED
/* broken: a click that finds a receipt answers already-applied instead of finishing the reopen */
#undef DECIDE
#define DECIDE(st, ph, rv, p) \
  (((st) == APPLIED || (st) == CONFIRMED) -> 1 : \
  (((ph) != COMPLETE || (rv) != propRev[p] || (st) != PENDING) -> 0 : 2))
#endif

#ifdef NO_SEQ_CHECK
#define SEQ_OK(s) true
#else
#define SEQ_OK(s) (seq == (s))
#endif

/* append the confirm receipt of p (transact A's record) */
inline writeReceipt(p) {
  receipts[p]++;
  assert(receipts[p] <= 1);                 /* at most one receipt per proposal */
  assert(!everFinal[p]);                    /* never for a declined or superseded proposal */
  status[p] = CONFIRMED;
  seq++
}

/* append the reopened state of p (transact B's record) */
inline writeReopen(p) {
  reopens[p]++;
  assert(reopens[p] <= 1);                  /* at most one reopen per proposal */
  assert(receipts[p] == 1);                 /* a reopen implies a receipt */
  assert(!everFinal[p]);                    /* a declined or superseded proposal never reopens */
  status[p] = APPLIED;
  phase = ACTIVE;
  rev++;
  seq++
}

/*
 * One click on proposal p from host h started in epoch e. `stampOk` = the workspace stamp still
 * matches (nondeterministic unless forced). Ends at `done` (answered or refused) or `dead` (SIGKILL).
 */
inline click(h, p, e, forceStamp) {
  /*
   * whenIdle + runMaintenance + locks.run (confirm.ts:46-50), then the re-read and decision inside
   * the window (55-57), which is also transact A's first snapshot (66-67). One atomic step: nothing
   * another process does between them is visible to this click except through the state it reads.
   * The early checks before the window (32-45) write nothing and only answer sooner: subsumed.
   */
  if
  :: atomic { epoch[h] == e && !window[h] -> window[h] = true; s = seq; d = DECIDE(status[p], phase, rev, p) }
  :: epoch[h] != e -> goto dead
  fi;
  if
  :: d == 0 || d == 1 -> goto release
  :: else
  fi;
  /* workspace stamp (confirm.ts:59-64): may fail, writes nothing */
  if
  :: skip
  :: !forceStamp -> goto release
  fi;
  tries = 0;
  if
  :: d == 2 ->
     /* transact A: the receipt (confirm.ts:65-74); re-decided on every attempt */
     do
     :: d != 2 -> goto release                  /* notReopenable: decided meanwhile */
     :: d == 2 ->
        if
        :: atomic { epoch[h] == e && SEQ_OK(s) -> writeReceipt(p) }; break
        :: atomic { epoch[h] == e && !SEQ_OK(s) -> tries++; s = seq; d = DECIDE(status[p], phase, rev, p) };
           if
           :: tries >= ATTEMPTS -> goto release    /* SEQ_CONFLICT */
           :: else
           fi
        :: epoch[h] != e -> goto dead
        fi
     od;
     tries = 0
  :: else
  fi;
  /* transact B: the reopened state from the receipt as recorded (confirm.ts:76-81) */
  atomic { s = seq; d = DECIDE(status[p], phase, rev, p) };
  do
#ifdef NO_RECHECK
  :: d = 3;
#endif
  :: d != 3 -> goto release                     /* notReopenable: receipt missing or decided */
  :: d == 3 ->
     if
     :: atomic { epoch[h] == e && SEQ_OK(s) -> writeReopen(p) }; break
     :: atomic { epoch[h] == e && !SEQ_OK(s) -> tries++; s = seq; d = DECIDE(status[p], phase, rev, p) };
        if
        :: tries >= ATTEMPTS -> goto release
        :: else
        fi
     :: epoch[h] != e -> goto dead
     fi
  od;
  /* follow-up turn (confirm.ts:82): no record in this model */
release:
  if
  :: atomic { epoch[h] == e -> window[h] = false }
  :: epoch[h] != e -> skip                      /* the crash already freed it */
  fi;
dead:
  atomic { s = 0; d = 0; tries = 0 }
}

proctype Click(byte h; bool first) {
  byte e, p, s, d, tries;
  /* The first click of each host is on p0; the others on p0 or on p1 (the proposal that supersedes it). */
  atomic { e = epoch[h]; if :: first -> p = 0 :: !first -> p = 0 :: !first -> p = 1 fi };
  click(h, p, e, false);
  atomic { running--; e = 0; p = 0 }
}

/* A user's Decline click: one transact, no window (confirm.ts:103-111) */
proctype Decline() {
  byte s, p, tries = 0;
  if :: p = 0 :: p = 1 :: goto none fi;         /* or the user never declines */
  do
  :: status[p] != PENDING && status[p] != CONFIRMED -> break    /* stale or already declined */
  :: atomic { (status[p] == PENDING || status[p] == CONFIRMED) -> s = seq };
     if
     :: atomic { SEQ_OK(s) -> status[p] = DECLINED; everFinal[p] = true; seq++ }; break
     :: atomic { !SEQ_OK(s) -> tries++ };
        if :: tries >= ATTEMPTS -> break :: else fi
     fi
  od;
none:
  atomic { running--; s = 0; p = 0; tries = 0 }
}

/* A new proposal for the complete task supersedes every pending or confirmed one (propose.ts) */
proctype Propose() {
  byte s, tries = 0, q;
  if :: skip :: goto none fi;                    /* or nobody proposes again */
  do
  :: phase != COMPLETE -> break                         /* TASK_NOT_COMPLETE */
  :: atomic { phase == COMPLETE -> s = seq };
     if
     :: atomic { SEQ_OK(s) && status[1] == NONE ->
          for (q : 0 .. P - 2) {
            if
            :: status[q] == PENDING || status[q] == CONFIRMED -> status[q] = SUPERSEDED; everFinal[q] = true
            :: else
            fi
          }
          status[1] = PENDING; propRev[1] = rev; seq++ }; break
     :: atomic { !SEQ_OK(s) -> tries++ };
        if :: tries >= ATTEMPTS -> break :: else fi
     fi
  od;
none:
  atomic { running--; s = 0; tries = 0; q = 0 }
}

/* SIGKILL of a host between any two steps: its clicks die, its in-memory window is freed; it restarts. */
proctype Crash() {
  byte h;
  do
  :: crashes < CRASHES && running > 0 ->
     atomic { if :: h = 0 :: h = 1 fi; epoch[h]++; window[h] = false; crashes++ }
  :: else -> break
  od
}

/*
 * After every click, decline, proposal and crash: a person clicks once more on a live host with an
 * unchanged workspace. An interrupted confirm (receipt, no reopen) must be completed exactly once, by
 * this click.
 */
proctype Finisher() {
  byte p, s, d, tries;
  timeout -> skip;             /* nothing else can move */
  assert(running == 0);
  for (p : 0 .. P - 1) {
    if
    :: status[p] == CONFIRMED -> click(0, p, epoch[0], true)
    :: else
    fi;
    assert(status[p] != CONFIRMED);            /* no interrupted confirm is left behind */
    assert(!(receipts[p] == 1 && !everFinal[p]) || reopens[p] == 1)
  }
}

init {
  byte h, c;
  atomic {
    status[0] = PENDING; propRev[0] = 1;
    running = HOSTS * CLICKS;
    for (h : 0 .. HOSTS - 1) {
      for (c : 1 .. CLICKS) { run Click(h, c == 1) }
    }
#ifndef WITHOUT_USER
    running = running + 2;
    run Decline();
    run Propose();
#endif
    run Crash();
    run Finisher()
  }
}
