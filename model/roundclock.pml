/*
 * The handshake of the rounds' clock (roundclock.go): a round that takes a
 * generation must see it closed, although the sweeper that closes
 * generations ends after a tick in which no round took one, and the next
 * round to take one starts a new sweeper.
 *
 * Property: a round blocked on its generation with nobody left to close it
 * is an invalid end state, which spin reports (the "end_state" line of
 * scripts/model-check.sh). The owner's Close is not modelled: a round
 * selects on it beside its generation.
 *
 * -DNO_RECHECK is the negative control: a sweeper that ends at an idle
 * tick without looking at used again after clearing running.
 */
#ifndef R
#define R 2 /* rounds */
#endif
#ifndef TAKES
#define TAKES 3 /* generations each round takes */
#endif
#define G (R * TAKES + 2) /* every rotation follows a take */

bool used;    /* roundClock.used */
bool running; /* roundClock.running */
byte gen;     /* the current generation, roundClock.gen */
bool closed[G];

/* rotate: roundClock.rotate */
inline rotate() {
	d_step { closed[gen] = true; gen++ }
}

/* Sweeper: roundClock.sweep; every step may come after a tick. */
proctype Sweeper() {
	bool was;
	do
	:: atomic { was = used; used = false }; /* used.Swap(false) */
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
	        :: !running -> running = true; run Sweeper()
	        :: else -> skip
	        fi
	      }
	   :: else -> skip
	   fi;
	   closed[g]; /* woken by the generation's close */
	   k++
	:: else -> break
	od
}

init {
	atomic {
		byte i;
		for (i : 1 .. R) { run Round() }
	}
}
