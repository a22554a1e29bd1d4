"""What the cooperation study raises, in a module of its own: the study (:mod:`coop.study.study`)
and its report (:mod:`coop.study.report`) both raise it, and neither needs the other for that."""


class StudyError(ValueError):
    """A study config or folder that cannot be used."""


__all__ = ["StudyError"]
