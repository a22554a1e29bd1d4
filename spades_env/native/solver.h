/* The exact endgame solver's C interface (solver.c), shared with search.c's play-outs. */
#ifndef SPADES_SOLVER_H
#define SPADES_SOLVER_H

#include <stdint.h>

enum { SOLVER_TABLE = 14 };             /* tricks 0..13 per member of a side */

/* A play-phase position of the four-seat partnership game with every hand known. */
typedef struct {
    uint64_t hands[4];
    int trick_len, trick[4], leader;    /* the trick in progress, led by `leader` (seats 0..3) */
    int broken, tricks_played, tricks_per_hand;
    int spades_lead;                    /* 0 broken, 1 any, 2 forced_only (rules.py SPADES_LEAD_CHOICES) */
    int no_spades_first_trick, two_of_clubs_leads;
    int taken[4];                       /* tricks each seat has taken so far this hand */
    int max_side;                       /* the side whose value the solver returns (0: seats 0 and 2) */
    /* tables[side][a][b]: the side's value when the hand ends with its first member (seat `side`)
     * on a tricks and its second (seat side + 2) on b; the value returned is the max side's entry
     * minus the other side's, maximised by the max side and minimised by the other. */
    const int32_t (*tables)[SOLVER_TABLE][SOLVER_TABLE];
} SolverPosition;

enum { SOLVER_OK = 0, SOLVER_ERR_ARGS = -20, SOLVER_ERR_ILLEGAL = -21, SOLVER_ERR_MEMORY = -22 };

/* The position's exact value (for p->max_side). Returns SOLVER_OK or a SOLVER_ERR_* code. */
int spades_solver_position_value(const SolverPosition *p, int32_t *value, int64_t *nodes);

/* The exact value of each of `cards` (legal cards of the seat to act) played now, sharing one
 * transposition table. Returns SOLVER_OK or a SOLVER_ERR_* code. */
int spades_solver_card_values(const SolverPosition *p, const int *cards, int n_cards, int32_t *values,
                              int64_t *nodes);

#endif
