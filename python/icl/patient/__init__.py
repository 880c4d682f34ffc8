"""Patient-perception layer: report and prediction formats, annotation page, demo data and scoring.

Schema ``0.4.0-patient-draft``. Angles are degrees in the perceptual frame (fixation at the origin, +x right,
+y up). Scores from this layer describe agreement with what people report; they are not clinical scores.
"""

from icl.patient.schema import (
    SCHEMA_VERSION,
    load_predictions,
    load_reports,
    prediction_schema,
    report_schema,
)

__all__ = ["SCHEMA_VERSION", "load_predictions", "load_reports", "prediction_schema", "report_schema"]
