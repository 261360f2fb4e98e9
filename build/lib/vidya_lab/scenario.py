"""Tanvi's scenario: the givens of the book's story, stated once.

Tanvi runs the platform of an AI tutor for school students. Everything here is an *assumption of the
story* (what her product manager and her logs tell her), not a measurement and not a result: the
chapters, the widgets' defaults, the exercises and ``vidya-lab plan`` (with no options) all read these
values from here, so the book tells one consistent story and changing a given changes it everywhere.

Results (GPU counts, latencies, bills) are never stored here: they are computed from these givens by
the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vidya_lab.slo import budgets as _budgets

#: How a replica's prefix cache is shared (chapter 4): one cache for everyone, a salt per school,
#: or a salt per student (which forbids even the syllabus).
ISOLATION_POLICIES = ("shared", "per-school", "per-student")
#: The longest gap between two tokens a student should ever see: the time an adult takes to read
#: one token (238 words a minute, 4/3 tokens a word; Brysbaert 2019), seconds (about 0.19 s).
READING_PACE_S = _budgets.tpot_for_reading_speed(_budgets.READING_WORDS_PER_MIN,
                                                 _budgets.TOKENS_PER_WORD)
#: Days in the year the reservations are bought against (the days not in exam weeks are normal).
DAYS_PER_YEAR = 365


@dataclass(frozen=True)
class Scenario:
    """The givens of a tutoring service's capacity question.

    Attributes
    ----------
    model_id : the self-hosted model (a ``vidya_lab.catalog`` id).
    candidate_gpu_ids : GPU types finance could rent (``vidya_lab.catalog`` ids).
    syllabus_prompt_tokens : the shared system prompt (the syllabus) every request starts with, tokens.
    subjects : number of per-subject prompts that follow the syllabus.
    subject_prompt_tokens : length of each per-subject prompt, tokens.
    question_tokens_mean : mean length of a student's own question (plus chat history), tokens.
    answer_tokens_mean : mean length of the tutor's answer, tokens.
    question_tokens_p50, answer_tokens_p50 : medians of those lengths, tokens (both are lognormal:
        most questions and answers are short, a few are long).
    answer_tokens_max : the answer length the service caps generation at, tokens.
    network_s : a student's network round trip for the request and the first token, seconds
        (a phone on a mobile network, TLS included).
    normal_peak_rps : request rate at the busiest minute of a normal school day, requests/s.
    exam_multiplier : exam season traffic relative to a normal day (the story's "ten times").
    rush_hour : local hour of the morning rush (7 am).
    ttft_target_s, tpot_target_s : the latency targets promised to students, seconds.
    itl_target_s : the longest gap between two tokens of an answer a student may see (a stall),
        seconds; default :data:`READING_PACE_S`: a student who has caught up with the text never
        waits longer for the next word than it takes to read one. TPOT is a mean over the answer
        and hides such a stall (chapter 5's freeze).
    slo_percentile : the percentile the targets apply to (99 means p99).
    attainment_target : fraction of requests that must meet every target.
    upload_tokens : one teacher's 50-page upload, tokens (about 800 tokens a page).
    observed_scale_up_s : how long the 7 am scale-up took in the story's incident, seconds; chapter 6
        derives this from the parts of a cold start rather than trusting it.
    schools : schools in the district the tutor serves (chapter 4's isolation table and exercise 4.10
        use a hundred).
    isolation : how the prefix cache is shared, one of :data:`ISOLATION_POLICIES`; chapter 4
        recommends a salt per school (a shared cache lets one school's students time another's
        uploads), with each school routed to few replicas.
    exam_weeks_per_year : weeks of exam season in a year (the rest are normal weeks); a year of
        :data:`DAYS_PER_YEAR` days is the load curve reservations are bought against.
    """

    model_id: str = "llama-3.3-70b"
    candidate_gpu_ids: tuple[str, ...] = ("h100-sxm", "h200", "a100-80gb", "l40s", "mi300x", "b200")
    syllabus_prompt_tokens: int = 3000
    subjects: int = 6
    subject_prompt_tokens: int = 400
    question_tokens_mean: int = 150
    answer_tokens_mean: int = 350
    question_tokens_p50: int = 100
    answer_tokens_p50: int = 250
    answer_tokens_max: int = 2000
    network_s: float = 0.15
    normal_peak_rps: float = 6.0
    exam_multiplier: float = 10.0
    rush_hour: int = 7
    ttft_target_s: float = 2.0
    tpot_target_s: float = 0.1
    slo_percentile: float = 99.0
    attainment_target: float = 0.99
    upload_tokens: int = 40_000
    observed_scale_up_s: float = 8 * 60.0
    itl_target_s: float = READING_PACE_S
    schools: int = 100
    isolation: str = "per-school"
    exam_weeks_per_year: int = 6
    notes: tuple[str, ...] = field(default=(
        "TTFT/TPOT targets follow MLPerf Inference v4.1's llama2-70b server scenario (2 s, 200 ms), "
        "tightened on TPOT to 100 ms so an answer streams at least as fast as a student reads.",
        "The ITL target (longest gap between two tokens) is the time an adult reads one token "
        "(Brysbaert 2019: 238 words a minute; 4/3 tokens a word): no stall a reader can catch up "
        "with. Metron (Agrawal et al. 2024) shows why a mean TPOT is not enough.",
        "Six exam weeks a year and a district of a hundred schools are assumptions of the story.",
    ))

    def __post_init__(self) -> None:
        from vidya_lab import _validate as v

        for name in ("syllabus_prompt_tokens", "subject_prompt_tokens", "question_tokens_mean",
                     "answer_tokens_mean", "question_tokens_p50", "answer_tokens_p50",
                     "answer_tokens_max", "subjects", "upload_tokens"):
            v.check_int(name, getattr(self, name), minimum=1 if name != "subject_prompt_tokens" else 0)
        for name in ("normal_peak_rps", "exam_multiplier", "ttft_target_s", "tpot_target_s",
                     "itl_target_s"):
            v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False)
        v.check_real("network_s", self.network_s, minimum=0.0)
        v.check_real("observed_scale_up_s", self.observed_scale_up_s, minimum=0.0)
        v.check_int("rush_hour", self.rush_hour, minimum=0, maximum=23)
        v.check_real("slo_percentile", self.slo_percentile, minimum=0.0, maximum=100.0,
                     min_inclusive=False)
        v.check_fraction("attainment_target", self.attainment_target, allow_zero=False)
        if not self.candidate_gpu_ids:
            raise ValueError("candidate_gpu_ids must name at least one GPU type")
        v.check_int("schools", self.schools, minimum=1, maximum=100_000)
        v.check_choice("isolation", self.isolation, ISOLATION_POLICIES)
        v.check_int("exam_weeks_per_year", self.exam_weeks_per_year, minimum=0, maximum=52)

    @property
    def exam_days_per_year(self) -> int:
        """Days of exam season in a year (7 × exam weeks)."""
        return 7 * self.exam_weeks_per_year

    @property
    def normal_days_per_year(self) -> int:
        """The other days of a :data:`DAYS_PER_YEAR`-day year."""
        return DAYS_PER_YEAR - self.exam_days_per_year

    @property
    def exam_peak_rps(self) -> float:
        """Request rate at the exam-season peak, requests/s."""
        return self.normal_peak_rps * self.exam_multiplier

    @property
    def prompt_tokens_mean(self) -> int:
        """Mean prompt length: syllabus + subject prompt + the student's question, tokens."""
        return self.syllabus_prompt_tokens + self.subject_prompt_tokens + self.question_tokens_mean


#: The book's scenario. Import this; do not copy its numbers.
TANVI = Scenario()
