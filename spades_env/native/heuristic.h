/* The rule-based heuristic player in C: agents/heuristic_decisions.py's decisions, exactly.
 *
 * agents/heuristic_decisions.py is the readable reference; this is a second implementation that makes
 * the same decision at every position (tests/test_native_heuristic.py checks it over thousands
 * of whole games in every preset). It decides from a SeatView: what one seat knows, in seats
 * relative to it (0 = itself, 1 = its left-hand opponent, 2 = its partner, 3 = its right-hand
 * opponent), the same information as spades_env.observation.ObservationView, reduced to what the
 * heuristic reads. The view can be filled from an observation vector (spades_heuristic_from_obs)
 * or, by a search, straight from a game state.
 */
#ifndef SPADES_HEURISTIC_H
#define SPADES_HEURISTIC_H

#include <stdint.h>

typedef struct {
    int32_t players;            /* 3 or 4 */
    int32_t partnerships;       /* 1: relative seats 0 and 2 are partners */
    int32_t phase;              /* spades_env.game PHASE_*: 0 blind decision, 1 bidding, 2 passing, 3 play;
                                   any other value (-1: none shown) is HEUR_ERR_BAD_VIEW unless exactly one
                                   action is legal (that one is returned before the view is read) */
    uint64_t hand;              /* own cards, bit c for card c = suit * 13 + rank (0 before looking) */
    uint64_t passed;            /* cards this seat passed to its partner (blind-nil passing) */
    int32_t bids[4];            /* per relative seat: -1 not bid yet, 0 nil, 1..13 */
    int32_t blind[4];           /* per relative seat: 1 if its nil was blind */
    int32_t tricks_taken[4];    /* per relative seat, this hand */
    int32_t trick_len;          /* cards in the current trick */
    int32_t trick_seat[4];      /* the current trick in play order: relative seat and card */
    int32_t trick_card[4];
    uint64_t played[4];         /* per relative seat: every card it played this hand (the trick's too) */
    int32_t voids[4];           /* per relative seat: bit s set when it has shown a void in suit s */
    int64_t scores[2];          /* own side's score, then the next side's (relative sides 0 and 1) */
    int64_t target_score;
    int32_t tricks_per_hand;    /* cards (and tricks) a seat gets: 13, 17 with three players, fewer in a short deck */
    uint64_t deck;              /* the cards in play (heuristic_deck): the highest tricks_per_hand ranks of every
                                   suit with four players, the deck without the two of clubs with three */
} SeatView;

/* Legal actions: bit a of legal[0] for actions 0..63, bit a - 64 of legal[1] for 64..83 (67 and
 * below: blind nil and look; 68 + m: message m of the free signal, rules signals: N <= 16). */
enum { HEUR_ERR_NO_LEGAL = -1, HEUR_ERR_BAD_VIEW = -2, HEUR_ERR_BAD_OBS = -3, HEUR_ERR_BAD_CONVENTIONS = -4 };

/* Conventions (agents/heuristic_conventions.py): an array of HEUR_CONV_COUNT int32, one per
 * option in this order, each the index of its value in CONVENTION_OPTIONS (0 = standard). A NULL
 * array is all standard: the heuristic as it played before conventions existed. */
enum { HEUR_CONV_BIDDING, HEUR_CONV_NIL, HEUR_CONV_COVER, HEUR_CONV_DISCARDS, HEUR_CONV_LEADS, HEUR_CONV_COUNT };
enum { BIDDING_STANDARD, BIDDING_CONSERVATIVE, BIDDING_AGGRESSIVE, BIDDING_VALUES };
enum { NIL_STANDARD, NIL_NEVER, NIL_EAGER, NIL_VALUES };
enum { COVER_STANDARD, COVER_NONE, COVER_STRONG, COVER_VALUES };
enum { DISCARDS_STANDARD, DISCARDS_NONE, DISCARDS_HIGH_ASKS, DISCARDS_LOW_ASKS, DISCARDS_VALUES };
enum { LEADS_STANDARD, LEADS_PARTNER_SUIT, LEADS_TRUMPS, LEADS_VALUES };

/* The cards in play for `players` seats of `tricks_per_hand` cards each (SeatView.deck). */
uint64_t spades_heuristic_deck(int players, int tricks_per_hand);
/* The heuristic's action (0..67; 68, message 0, in the signal phase), or a negative HEUR_ERR_* code. */
int spades_heuristic_act(const SeatView *v, const uint64_t legal[2]);
/* The same under `conventions` (NULL: standard); HEUR_ERR_BAD_CONVENTIONS for a value out of range. */
int spades_heuristic_act_with(const SeatView *v, const uint64_t legal[2], const int32_t *conventions);
/* HEUR_CONV_COUNT (the Python side checks that it matches its option count). */
int spades_heuristic_convention_count(void);
/* spades_heuristic_from_obs (heuristic.c) under `conventions` (NULL: standard); returns
 * HEUR_ERR_BAD_CONVENTIONS, writing nothing, when a value is out of range. */
int64_t spades_heuristic_from_obs_with(const float *obs, const uint8_t *mask, int64_t rows, const int64_t *layout,
                                       const int32_t *conventions, int64_t *out, int64_t threads);

/* The heuristic's action for one observation row (float32, in the layout `layout` describes, as
 * spades_heuristic_from_obs takes it) and its mask (the layout's action count of bytes, 68 +
 * signals, nonzero = legal): an action id, or a negative HEUR_ERR_* code. The batched engine's play-until loop calls it for the seats it plays. */
int64_t spades_heuristic_decide(const float *obs, const uint8_t *mask, const int64_t *layout);
/* 1 if `layout` describes an observation the decoder can read (checked once by the callers of
 * spades_heuristic_decide, which does not check it), else 0. */
int spades_heuristic_layout_ok(const int64_t *layout);

#endif
