/*
 * The handshake of the rounds' clock (roundclock.go): a round that takes a
 * generation must see it closed, although the sweeper that closes
 * generations ends after a tick in which no round took one, and the next
 * round to take one starts a new sweeper.
 *
 * The owner's Close may come at any moment. A round waiting on its
 * generation does not select on the owner's dying: it looks at dying when
 * the generation closes, and ends if it is set. The sweeper closes the
 * current generation when it sees dying and ends for good (running stays
 * set). Once the owner is closed, starting a sweeper is refused, and the
 * round that was refused closes the current generation itself: an older
 * sweeper may have ended at that moment, trusting the refused one to close
 * what other rounds took. And take hands out a closed generation once
 * dying is set.
 *
 * Property: a round blocked on its generation with nobody left to close it
 * is an invalid end state, which spin reports (the "end_state" line of
 * scripts/model-check.sh).
 *
 * -DCLOSE lets Close come; without it the owner stays open.
 *
 * Negative controls: -DNO_RECHECK, a sweeper that ends at an idle tick
 * without looking at used again after clearing running; -DNO_DYING_CHECK,
 * a take that hands out the current generation also once dying is set;
 * -DNO_REFUSED_ROTATE, a round refused a sweeper that leaves the current
 * generation open.
 */
#ifndef R
#define R 2 /* rounds */
#endif
#ifndef TAKES
#define TAKES 3 /* generations each round takes */
#endif
#ifdef CLOSE
#define G (R * TAKES + 3) /* every rotation follows a take, or Close */
#else
#define G (R * TAKES + 2) /* every rotation follows a take */
#endif

bool used;    /* roundClock.used */
bool running; /* roundClock.running */
byte gen;     /* the current generation, roundClock.gen */
bool closed[G];
#ifdef CLOSE
bool dying;   /* the owner's dying, closed as Close begins */
#else
#define dying false /* the owner stays open */
#endif

/* rotate: roundClock.rotate */
inline rotate() {
	d_step { closed[gen] = true; gen++ }
}

/* Sweeper: roundClock.sweep; every step may come after a tick. */
proctype Sweeper() {
	bool was;
	do
	:: dying -> rotate(); break /* the select's dying: running stays set */
	:: atomic { was = used; used = false }; /* the tick: used.Swap(false) */
	   if
	   :: was -> rotate()
	   :: else ->
	      running = false;
#ifdef NO_RECHECK
	      break
#else
	      if
	      :: used ->
	         atomic { /* running.CompareAndSwap(false, true) */
	           if
	           :: !running -> running = true
	           :: else -> break
	           fi
	         }
	      :: else -> break
	      fi
#endif
	   fi
	od
}

/* Round: the part of fanout.wait that takes generations (roundClock.take). */
proctype Round() {
	byte g, k;
	do
	:: k < TAKES ->
	   g = gen; /* gen.Load */
	   if       /* if !used.Load() { used.Store(true) } */
	   :: !used -> used = true
	   :: else -> skip
	   fi;
	   if       /* if !running.Load() && running.CompareAndSwap(false, true) */
	   :: !running ->
	      atomic {
	        if
	        :: !running -> running = true;
	           if
	           :: run Sweeper()
	           :: dying -> /* spawn refused: the owner is closed */
#ifndef NO_REFUSED_ROTATE
	              rotate()
#else
	              skip
#endif
	           fi
	        :: else -> skip
	        fi
	      }
	   :: else -> skip
	   fi;
#ifndef NO_DYING_CHECK
	   if       /* if c.o.closing() { return closedGen } */
	   :: dying -> break
	   :: else -> skip
	   fi;
#endif
	   closed[g]; /* woken by the generation's close */
#ifdef CLOSE
	   if       /* fanout.wait: the tick case looks at dying */
	   :: dying -> break
	   :: else -> skip
	   fi;
#endif
	   k++
	:: else -> break
	od
}

#ifdef CLOSE
/* Close: the owner's cancel closes dying. */
proctype Closer() {
	dying = true
}
#endif

init {
	atomic {
		byte i;
		for (i : 1 .. R) { run Round() }
#ifdef CLOSE
		run Closer()
#endif
	}
}
