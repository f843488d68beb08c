/*
 * A model of this library's Redlock, as lock.go, quorum.go, fence.go,
 * autoextend.go, cleanup.go, options.go and lua/*.lua implement it, for
 * spin. scripts/model-check.sh runs it; model/README.md says how.
 *
 * N nodes keep one lock name: a key holding a token, with a time to live,
 * and with FENCING the register NAME:fence. C clients acquire, extend and
 * release it. Time is a discrete clock of ticks, and every timer is kept
 * relative to the present (a key's remaining life, a holding's remaining
 * validity, a round's elapsed time, and with FENCING the age of every
 * clock reading), so the clock runs for ever and no horizon bounds the
 * search. ABSTIME keeps an absolute clock instead, which stops at TMAX.
 *
 * Faults, each bounded in number: a restart that loses the node's data,
 * away for DOWN_FOR ticks (>= TTL) or, with RESTART_IMMEDIATE, back at
 * once; a forward step of one node's wall clock; a SET or a delete
 * delivered late (after any validity) or never; ticks inside a round (a
 * slow round, or a pause inside one). Every node's clock runs fast by
 * FAST ticks per TTL. A client may pause between its rounds for as long
 * as it likes: no process is ever made to move on.
 *
 * Properties, as assertions whose text starts with their name (pan prints
 * it):
 *   mutual_exclusion  no two clients are inside their validity at once;
 *   fence_order       (FENCING) tokens strictly increase in the order in
 *                     which holdings are issued, so no two share one;
 *   release_own_key   a release or a discard never deletes the key of a
 *                     client that holds the lock.
 * NO_CHECK_<name> turns one off, so that a negative control can fail only
 * on the property it protects.
 *
 * Options (-D): FENCING; RESTART_GUARD, CLOCK_GUARD and EXTEND_GUARD, the
 * node guard as specified (see VOTES). Broken variants, one per negative
 * control: QUORUM=N/2, DRIFT_ALLOW=0, NO_WRITEBACK, NO_SEED, PLAIN_DEL,
 * NO_ELAPSED, UNTIL_RELEASE. WITNESS=k asks whether the model reaches a situation (see
 * issue), to show that the bounds leave the properties something to check.
 *
 * Abstractions (model/README.md says why each loses nothing it needs):
 * an acquire round reaches the nodes in index order, one step each, with
 * other clients and faults between any two; the other rounds (extend,
 * release, discard, fence commit) reach every node in one step; one lock
 * name; tokens are distinct small numbers; a node's clock rate is folded
 * into the life of its keys (FAST).
 */

/* ---- configuration (in ticks unless said) --------------------------------- */

#ifndef N
#define N 3             /* nodes */
#endif
#ifndef C
#define C 2             /* clients */
#endif
#ifndef QUORUM
#define QUORUM (N/2+1)  /* options.go config.validate: N/2+1 */
#endif
#ifndef TTL
#define TTL 3
#endif
#ifndef DRIFT_ALLOW
#define DRIFT_ALLOW 1   /* options.go config.drift: ttl*factor + 2 ms */
#endif
#ifndef FAST
#define FAST 1          /* node clocks run fast: a key lives TTL-FAST ticks of real time */
#endif
#ifndef ATT
#define ATT 1           /* attempts per client */
#endif
#ifndef MAXEXT
#define MAXEXT 1        /* extensions per holding */
#endif
#ifndef SKEW
#define SKEW 0          /* node wall clocks start 0..SKEW ticks ahead of real time */
#endif
#ifndef SKEWED
#define SKEWED N        /* ... at most SKEWED of them */
#endif
#ifndef CSKEW
#define CSKEW 0         /* client wall clocks start 0..CSKEW ahead */
#endif
#ifndef MAXRESTART
#define MAXRESTART 1    /* restarts that lose the node's data */
#endif
#ifndef DOWN_FOR
#define DOWN_FOR TTL    /* how long a restarted node stays away (Redlock's rule: >= TTL) */
#endif
#ifndef MAXSTEP
#define MAXSTEP 0       /* forward steps of one node's wall clock */
#endif
#ifndef STEPMAX
#define STEPMAX LIFE    /* a step is 1..STEPMAX ticks (a larger one expires keys as LIFE does) */
#endif
#ifndef MAXDELAY
#define MAXDELAY 1      /* messages delivered late or never */
#endif
#ifndef DELAY_DEL
#define DELAY_DEL 1     /* whether the delayed message may be a delete (else only a SET) */
#endif
#ifndef MAXSLOW
#define MAXSLOW 1       /* ticks in all while some client's acquire round is under way */
#endif
#ifndef WINDOW
#define WINDOW TTL      /* restart guard: a node up for less does not vote (>= TTL) */
#endif
#ifndef CLOCK_ALLOW
#define CLOCK_ALLOW 0   /* clock guard: the largest node-client clock difference that votes */
#endif
#ifndef W
#define W 1             /* fence.go fenceWindow: min(ttl/8, 50 ms) */
#endif
#ifdef ABSTIME
#ifndef TMAX
#define TMAX 8          /* the absolute clock stops here */
#endif
#endif

#define VALID (TTL - DRIFT_ALLOW)  /* a validity lasts VALID from its round's start */
#define LIFE (TTL - FAST)          /* a key's real lifetime: PX ttl on a fast clock */

/*
 * Clock readings (FENCING). With ABSTIME they are absolute. Otherwise a
 * stored reading is kept as its difference to the present, and it ages by
 * one each tick down to FLOOR, where it stays: every reading a round can
 * still compare with a stored one (TIME, the proposal g, the token t) is
 * newer than FLOOR, and each comparison and max the scripts make gives
 * the same answer for every value at or below it, so the floor loses
 * nothing (the assertion relative_clock_exact checks the premise). The
 * one exception is NO_SEED, whose f is a stored value that may be older
 * than the floor: that variant needs ABSTIME.
 */
#ifdef ABSTIME
#define ZERO 0                      /* an absent fence reads 0 */
#define NCLOCK(n) (now + off[n])    /* the node's TIME */
#define CCLOCK(c) (now + coff[c])   /* fenceclock.Now() */
#else
#if defined(NO_SEED) && defined(FENCING)
#error NO_SEED needs ABSTIME
#endif
#define FLOOR (-(MAXSLOW + W + 1))
#define ZERO FLOOR                  /* 0 is older than anything a client will compare */
#define NCLOCK(n) (off[n])
#define CCLOCK(c) (coff[c])
#define AGE(x) x = (x > FLOOR -> x - 1 : FLOOR)
#endif

/* ---- state ------------------------------------------------------------------ */

/* nodes */
byte key[N];              /* the lock key's token; 0: absent */
byte klife[N];            /* its remaining life */
byte off[N];              /* how far the node's wall clock is ahead of real time */
byte down[N];             /* a restarted node answers nothing for this long */
byte quar[N];             /* RESTART_GUARD: until it has been up for WINDOW */
#ifdef FENCING
short F[N];               /* NAME:fence, lost with the node's data */
#endif

/* clients */
byte coff[C];             /* how far the client's wall clock is ahead */
bit held[C];              /* issued and not released */
byte vrem[C];             /* remaining validity: holding.validUntil - now */
byte el[C];               /* the acquire round's elapsed time, capped at VALID */
byte ctok[C];             /* the holding's token */
#ifdef FENCING
short g[C];               /* the attempt's proposal (fence.go acquireCommand) */
short t[C];               /* its token */
short maxf[C];            /* fence.go commitFence: the largest f the round counted */
short lastTok;            /* ghost: the token of the last holding issued */
#endif
byte inround;             /* clients whose acquire round is under way */

/* faults */
byte restarts, steps, delays, slow;
byte p_op, p_node, p_tok; /* the delayed message: a SET or a delete */
#ifdef FENCING
short p_g;                /* a delayed fenced SET's proposal */
#endif
#ifdef ABSTIME
byte now;
#endif
#ifdef WITNESS
byte nissued;             /* ghost: holdings issued */
byte rnode;               /* ghost: the node that restarted */
bit viaRestarted, viaWriteBack, extended;
#endif
#define OP_SET 1
#define OP_DEL 2
#define OP_EXT 3
#define OP_COMMIT 4
#ifdef FENCING
#define CLEAR_P p_node = 0; p_g = ZERO
#else
#define CLEAR_P p_node = 0
#endif

/* whether a won acquire round issues the holding at once */
#if defined(FENCING) && !defined(NO_WRITEBACK)
#define ONE_ROUND (ncomm >= QUORUM)
#else
#define ONE_ROUND 1
#endif

/* always 1: they name the property in the assertion that pan reports */
hidden byte mutual_exclusion = 1;
hidden byte fence_order = 1;
hidden byte release_own_key = 1;
hidden byte relative_clock_exact = 1;
hidden byte witness = 1;

hidden byte si, hr, hc;   /* scratch of atomic steps, not part of the state */
hidden short hf;

#define R_OK 1    /* set, extended, deleted, committed */
#define R_NO 2    /* refused: the key is absent or holds another token */
#define R_ERR 3   /* no answer in time */

#define DOWN(n) (down[n] > 0)
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define OWNER(k) (((k) - 1) / ATT)   /* token k = c*ATT + attempt number */
#define HOLDS(k) ((k) != 0 && held[OWNER(k)] && ctok[OWNER(k)] == (k))
#ifdef UNTIL_RELEASE
#define INSIDE(d) held[d]     /* broken variant: a holder acts until it releases */
#else
#define INSIDE(d) (held[d] && vrem[d] > 0)
#endif

/* ---- the node guard ----------------------------------------------------------- */

/*
 * The node guard as specified for WithRestartGuard and WithClockGuard,
 * which are being implemented in parallel: this models the specification,
 * not code. In an attempt's round a node's grant counts only if
 *  - RESTART_GUARD: it has been up for WINDOW (>= TTL) since it restarted,
 *    as its uptime shows (a node of this model never keeps its data across
 *    a restart, so it cannot show that it did);
 *  - CLOCK_GUARD: its wall clock, read with TIME in the same round,
 *    differs from the client's by at most CLOCK_ALLOW.
 * A node that does not vote still ran the command: its key is there, and
 * a failed attempt's discard deletes it as any other.
 *
 * EXTEND_GUARD applies the clock guard to extension rounds too. The
 * specification names attempts only, and that is not enough: a node whose
 * clock stepped lost one holder's key early; another client's SET that
 * reached it late then lets that client's extension count it while the
 * first still holds (the negative control "clock guard on attempts
 * only"). The restart guard needs no such help: a command sent before a
 * restart dies with the connection, so a key on a restarted node was set
 * after the restart, in a round where that node did not vote.
 */
#ifdef RESTART_GUARD
#define RGUARD(n) (quar[n] == 0)
#else
#define RGUARD(n) 1
#endif
#ifdef CLOCK_GUARD
#define CGUARD(n, c) (off[n] <= coff[c] + CLOCK_ALLOW && coff[c] <= off[n] + CLOCK_ALLOW)
#else
#define CGUARD(n, c) 1
#endif
#define VOTES(n, c) (RGUARD(n) && CGUARD(n, c))
#ifdef EXTEND_GUARD
#define EXT_VOTES(n, c) CGUARD(n, c)
#else
#define EXT_VOTES(n, c) 1
#endif


/* ---- node side: the commands and scripts ---------------------------------------- */

/* A key leaves when its life is spent (Redis expires by its wall clock). */
inline expire(n, by) {
  if
  :: key[n] != 0 && klife[n] > by -> klife[n] = klife[n] - by
  :: key[n] != 0 && klife[n] <= by -> key[n] = 0; klife[n] = 0
  :: else
  fi
}

/*
 * The attempt's command on node n for token k (fence.go acquireCommand):
 * SET NAME k NX PX ttl, or with FENCING lua/acquire_fenced.lua proposing
 * gg. Sets hr; with FENCING also hf, the value answered (gg when
 * committed, else the node's f), and hc, whether it committed gg.
 */
inline node_set(n, k, gg) {
  if
  :: key[n] == 0 ->
     key[n] = k; klife[n] = LIFE; hr = R_OK;
#ifdef FENCING
#ifdef NO_WRITEBACK
     /* Broken variant, a one-round max: the node bumps its own register
      * (an INCR over the TIME seed) and the client issues the largest
      * value; the token itself is never carried back to the nodes. */
     hf = MAX(F[n], NCLOCK(n)) + 1; F[n] = hf; hc = 0
#else
     if
     :: gg > F[n] && gg + W > NCLOCK(n) && gg <= NCLOCK(n) + W ->
        F[n] = gg; hf = gg; hc = 1     /* above the fence, within w of TIME */
     :: else ->
        hc = 0;
#ifdef NO_SEED
        hf = F[n]                      /* broken variant: no TIME seed */
#else
        hf = MAX(F[n], NCLOCK(n))      /* f = max(stored, TIME) */
#endif
     fi
#endif
#endif
  :: else -> hr = R_NO
  fi
}

/* lua/extend.lua (extend_many.lua in a batch): PEXPIRE iff the key holds k. */
inline node_extend(n, k) {
  if
  :: key[n] == k -> klife[n] = LIFE; hr = R_OK
  :: else -> hr = R_NO
  fi
}

/*
 * lua/release.lua: DEL iff the key holds k; PLAIN_DEL, a bare DEL. For
 * Release (lock.go releaseNodes) and for the discard of a failed attempt
 * (lock.go discard and sendDelete; cleanup.go sends release_many.lua,
 * the same check for many keys).
 */
#ifdef PLAIN_DEL
#define DELETES(n, k) (key[n] != 0)
#else
#define DELETES(n, k) (key[n] == (k))
#endif
inline node_del(n, k) {
  if
  :: DELETES(n, k) ->
#ifndef NO_CHECK_release_own_key
     assert(release_own_key && (key[n] == (k) || !HOLDS(key[n])));
#endif
     key[n] = 0; klife[n] = 0; hr = R_OK
  :: else -> hr = R_NO
  fi
}

#ifdef FENCING
/* lua/fence_commit.lua: F = max(F, tt) iff the key holds k. */
inline node_commit(n, k, tt) {
  if
  :: key[n] == k -> F[n] = MAX(F[n], tt); hr = R_OK
  :: else -> hr = R_NO
  fi
}
#endif

/*
 * Sending to node n: a node that is down answers nothing. A SET or a
 * delete may be the one delayed message: it gets no reply in time and
 * runs later, or never (net below). (A late extension or fence commit is
 * no worse than a failed one: it only renews or raises what is the
 * caller's.) Otherwise the node runs the command now.
 */
#define SEND(n, op, k, body)                                              \
  if                                                                      \
  :: DOWN(n) -> hr = R_ERR                                                \
  :: !DOWN(n) && delays < MAXDELAY && (op == OP_SET || DELAY_DEL && op == OP_DEL) -> \
     delays++; p_op = op; p_node = n; p_tok = k; SAVE_G; hr = R_ERR       \
  :: !DOWN(n) -> body                                                     \
  fi
#ifdef FENCING
#define PROPOSAL g[c]
#define SAVE_G p_g = g[c]
#else
#define PROPOSAL 0
#define SAVE_G skip
#endif

/*
 * One round to every node at once, for the rounds whose outcome on a node
 * cannot depend on what other clients do between two of its nodes:
 * extend, release, discard and the fence commit act only on a key that
 * holds the caller's token, which nobody else can set meanwhile. (The
 * acquire round, where it matters, reaches the nodes one step at a time.)
 * Counts the replies in oks, noes and errs.
 */
#define ROUND(op, k, body)                                                \
  n = 0;                                                                  \
  do                                                                      \
  :: n < N ->                                                             \
     SEND(n, op, k, body);                                                \
     if                                                                   \
     :: hr == R_OK -> oks++                                               \
     :: hr == R_NO -> noes++                                              \
     :: else -> errs++                                                    \
     fi;                                                                  \
     n++                                                                  \
  :: else -> break                                                        \
  od

/* ---- the properties ------------------------------------------------------------ */

/*
 * Mutual exclusion. A client becomes inside its validity only when its
 * holding is issued or an extension moves its validity on; time and
 * release only end it. So if two clients are ever inside at once, both
 * were inside at the later of those two moments: checking there covers
 * every state.
 */
inline check_mutex(c) {
#ifndef NO_CHECK_mutual_exclusion
  si = 0;
  do
  :: si < C ->
     assert(mutual_exclusion && (si == c || !INSIDE(c) || !INSIDE(si)));
     si++
  :: else -> break
  od
#else
  skip
#endif
}

/*
 * Issue a holding, at the decision of its last round (lock.go attempt,
 * then startHolding): validUntil = start + ttl - drift. The token order
 * is checked in the order of these moments (docs/SAFETY.md: T_H).
 */
inline issue(c) {
  held[c] = 1; ctok[c] = tk;
#ifdef NO_ELAPSED
  vrem[c] = VALID;            /* broken variant: ttl - drift from now */
#else
  vrem[c] = VALID - el[c];
#endif
  check_mutex(c);
#ifdef FENCING
#ifndef ABSTIME
  assert(relative_clock_exact && t[c] > FLOOR);
#endif
#ifndef NO_CHECK_fence_order
  assert(fence_order && t[c] > lastTok);
#endif
  lastTok = t[c];
#endif
#ifdef WITNESS
  nissued++;
  /*
   * Reachability questions, each expected to fail, to show that the model
   * gets there: 1, two holdings; 2, a holding counted by a node that
   * restarted; 3, a holding after a clock step; 4, a holding whose token
   * took the write-back round; 5, a holding issued after an extension.
   */
  assert(witness && !(
       WITNESS == 1 && nissued >= 2
    || WITNESS == 2 && viaRestarted
    || WITNESS == 3 && steps > 0 && nissued >= 2
    || WITNESS == 4 && viaWriteBack && nissued >= 2
    || WITNESS == 5 && extended && nissued >= 2));
#endif
}

/* ---- the client --------------------------------------------------------------- */

/* The end of an acquire round: what later steps do not need is reset (so
 * that it does not tell states apart), then hold, or discard and retry. */
inline end_round() {
  el[c] = VALID; inround--; n = 0; oks = 0; noes = 0; errs = 0; decided = 0; win = 0;
#ifdef FENCING
  g[c] = ZERO; t[c] = ZERO; maxf[c] = ZERO; ncomm = 0;
#endif
  if
  :: held[c] -> goto hold
  :: else ->
     /* lock.go discard/sendDelete after a failed attempt, behind its SETs:
      * every node, the script being a no-op where the key is not ours */
     ROUND(OP_DEL, tk, node_del(n, tk));
     n = 0; oks = 0; noes = 0; errs = 0;
     goto next
  fi
}

proctype client(byte c) {
  byte a;                /* attempts made */
  byte tk;               /* the attempt's token (lock.go newToken) */
  byte n;                /* the next node of a round */
  byte oks, noes, errs;  /* quorum.go round.count */
  bit decided, win;
  byte ext;              /* extensions of this holding */
  byte ncomm;            /* FENCING: nodes that committed g */

next:
  if
  :: a < ATT
  :: else -> goto done
  fi;
  /* lock.go runAcquire: an attempt, after any pause */
  atomic {
    a++; tk = c * ATT + a; el[c] = 0; inround++;
#ifdef FENCING
    g[c] = CCLOCK(c);
#endif
  }
  /*
   * lock.go attempt, quorum.go fanout.send and wait: SET on every node;
   * the round is decided at the reply that makes a quorum of grants, or
   * makes one impossible. Later replies are not counted, but their SETs
   * land. Other clients and faults may come between any two nodes.
   */
  do
  :: atomic {
       n < N ->
       SEND(n, OP_SET, tk, node_set(n, tk, PROPOSAL));
       if
       :: !decided ->
          if
          :: hr == R_OK && VOTES(n, c) ->
             oks++;
#ifdef FENCING
             maxf[c] = MAX(maxf[c], hf);
             ncomm = ncomm + hc;
#endif
#ifdef WITNESS
             viaRestarted = viaRestarted || quar[n] == 0 && restarts > 0 && n == rnode;
#endif
          :: hr == R_NO -> noes++
          :: else -> errs++   /* no answer, or a grant the guard leaves out */
          fi;
          if
          :: oks >= QUORUM || noes + errs > N - QUORUM || n == N - 1 ->
             /* a quorum, and validity = ttl - elapsed - drift > 0 */
             decided = 1;
#ifdef NO_ELAPSED
             win = (oks >= QUORUM);
#else
             win = (oks >= QUORUM && el[c] < VALID);
#endif
#ifdef FENCING
             /* fence.go commitFence: the proposal if a quorum committed
              * it, else 1 + max f, to write back (NO_WRITEBACK: the
              * largest value, issued as it is) */
#ifdef NO_WRITEBACK
             t[c] = maxf[c];
#else
             t[c] = (ncomm >= QUORUM -> g[c] : maxf[c] + 1);
#endif
#endif
             if
             :: win && ONE_ROUND -> issue(c)
             :: else
             fi
          :: else
          fi
       :: else
       fi;
       n++;
       if
       :: n == N && !(win && !held[c]) -> end_round()
       :: else
       fi
     }
#if defined(FENCING) && !defined(NO_WRITEBACK)
  :: atomic {
       n == N && win && !held[c] ->
       /* the write-back: lua/fence_commit.lua on every node, counted at
        * quorum; then the validity is measured again from the start */
       oks = 0; noes = 0; errs = 0;
       ROUND(OP_COMMIT, tk, node_commit(n, tk, t[c]));
#ifndef ABSTIME
       assert(relative_clock_exact && t[c] > FLOOR);
#endif
       win = (oks >= QUORUM && el[c] < VALID);
       if
       :: win ->
#ifdef WITNESS
          viaWriteBack = 1;
#endif
          issue(c)
       :: else
       fi;
       end_round()
     }
#endif
  od;

  /*
   * Holding: extend (autoextend.go extend and apply, lock.go
   * extendHolding), or release. A holder that stops (a crash, a pause for
   * good) is one that takes neither step: its keys expire. An extension
   * may start even after the validity ran out: the library's expiry timer
   * races with the extender.
   */
hold:
  if
  :: atomic {
       ext < MAXEXT -> ext++;
       n = 0;
       do
       :: n < N ->
          SEND(n, OP_EXT, tk, node_extend(n, tk));
          if
          :: hr == R_OK && EXT_VOTES(n, c) -> oks++
          :: else
          fi;
          n++
       :: else -> break
       od;
       if
       :: oks >= QUORUM ->
          /* holding.extendTo(start + ttl - drift), if later */
          vrem[c] = VALID;
#ifdef WITNESS
          extended = 1;
#endif
          check_mutex(c)
       :: else   /* held until the validity runs out */
       fi;
       n = 0; oks = 0; noes = 0; errs = 0
     }
     goto hold
  :: atomic {
       /* lock.go Release: the holding ends (its interval is cut here),
        * then releaseNodes sends the release script to every node */
       held[c] = 0; vrem[c] = 0; ctok[c] = 0; ext = 0;
       ROUND(OP_DEL, tk, node_del(n, tk));
       n = 0; oks = 0; noes = 0; errs = 0
     }
     goto next
  fi;
done:
  skip
}

/* ---- time, faults, network ------------------------------------------------------ */

/*
 * A tick: keys age, down and quarantine times run out, validities,
 * rounds' elapsed times and clock readings move on. Time passes freely
 * between rounds, but only MAXSLOW ticks in all while an acquire round is
 * under way.
 */
active proctype clock() {
end:
  do
  :: d_step {
#ifdef ABSTIME
       (inround == 0 || slow < MAXSLOW) && now < TMAX; now++;
#else
       inround == 0 || slow < MAXSLOW;
#endif
       slow = slow + (inround > 0 -> 1 : 0);
       si = 0;
       do
       :: si < N ->
          expire(si, 1);
          if
          :: down[si] > 0 -> down[si]--
          :: else
          fi;
          if
          :: quar[si] > 0 -> quar[si]--
          :: else
          fi;
#if defined(FENCING) && !defined(ABSTIME)
          AGE(F[si]);
#endif
          si++
       :: else -> break
       od;
       si = 0;
       do
       :: si < C ->
          if
          :: vrem[si] > 0 -> vrem[si]--
          :: else
          fi;
          if
          :: el[si] < VALID -> el[si]++
          :: else
          fi;
#if defined(FENCING) && !defined(ABSTIME)
          AGE(g[si]); AGE(t[si]); AGE(maxf[si]);
#endif
          si++
       :: else -> break
       od;
#if defined(FENCING) && !defined(ABSTIME)
       AGE(lastTok); AGE(p_g);
#endif
     }
  od
}

/*
 * Restart: the node loses its keys and its fence (no persistence), and
 * the commands on their way to it, and is away for DOWN_FOR, or with
 * RESTART_IMMEDIATE may come back at once.
 * Clock step: one node's wall clock jumps forward, which expires its keys
 * early and moves its TIME.
 */
active proctype faults() {
  byte n;
end:
  do
  :: atomic {
       restarts < MAXRESTART -> restarts++;
       select (n : 0 .. N - 1);
       key[n] = 0; klife[n] = 0;
#ifdef FENCING
       F[n] = ZERO;
#endif
       /* a restart closes every connection: a command still on its way
        * to the node is lost (nothing here sends one again) */
       if
       :: p_op != 0 && p_node == n -> p_op = 0; p_tok = 0; CLEAR_P
       :: else
       fi;
       if
       :: down[n] = DOWN_FOR
#ifdef RESTART_IMMEDIATE
       :: down[n] = 0
#endif
       fi;
#ifdef RESTART_GUARD
       quar[n] = down[n] + WINDOW;
#endif
#ifdef WITNESS
       rnode = n;
#endif
       n = 0
     }
  :: atomic {
       steps < MAXSTEP -> steps++;
       select (n : 0 .. N - 1);
       select (hr : 1 .. STEPMAX);
       off[n] = off[n] + hr;
       expire(n, hr);
       n = 0
     }
  od
}

/* The delayed message runs at any later moment, or is lost. */
active proctype net() {
end:
  do
  :: atomic {
       p_op != 0 ->
       if
       :: DOWN(p_node)
#ifdef FENCING
       :: !DOWN(p_node) && p_op == OP_SET -> node_set(p_node, p_tok, p_g)
#else
       :: !DOWN(p_node) && p_op == OP_SET -> node_set(p_node, p_tok, 0)
#endif
       :: !DOWN(p_node) && p_op == OP_DEL -> node_del(p_node, p_tok)
       fi;
       p_op = 0; p_tok = 0; CLEAR_P
     }
  :: atomic { p_op != 0 -> p_op = 0; p_tok = 0; CLEAR_P }
  od
}

init {
  atomic {
    /* wall clocks start anywhere within SKEW (nodes) and CSKEW (clients) */
    si = 0; hc = 0;
    do
    :: si < N -> select (hr : 0 .. SKEW);
       if
       :: hr > 0 && hc < SKEWED -> hc++
       :: else -> hr = 0
       fi;
       off[si] = hr;
#ifdef FENCING
       F[si] = ZERO;
#endif
       si++
    :: else -> break
    od;
    si = 0;
    do
    :: si < C -> select (hr : 0 .. CSKEW); coff[si] = hr; el[si] = VALID;
#ifdef FENCING
       g[si] = ZERO; t[si] = ZERO; maxf[si] = ZERO;
#endif
       si++
    :: else -> break
    od;
#ifdef FENCING
    p_g = ZERO; lastTok = ZERO;
#endif
    si = 0;
    do
    :: si < C -> run client(si); si++
    :: else -> break
    od;
    hc = 0
  }
}
