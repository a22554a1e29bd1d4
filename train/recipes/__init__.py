"""Recipes: a model's whole lineage as named steps, run by one command.

    spades-train --recipe configs/recipes/neural.yaml --dry-run        # every step's command
    spades-train --recipe configs/recipes/neural.yaml                  # run what is not done yet
    spades-train --recipe configs/recipes/neural.yaml --from nil_defence_rule=neural_v6

``recipe`` reads and checks a recipe file, ``kinds`` says what each kind of step runs,
``runner`` plans, hashes, reuses and resumes, ``ship`` compares the last model with the
shipped one of the same name.
"""

from .recipe import Recipe, RecipeError, Step, load_recipe
from .runner import Runner, run_recipe

__all__ = ["Recipe", "RecipeError", "Runner", "Step", "load_recipe", "run_recipe"]
