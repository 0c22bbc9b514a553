"""Process templates the simulation plays: purchase-to-pay and order-to-cash."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TEMPLATES", "ProcessTemplate"]


@dataclass(frozen=True)
class ProcessTemplate:
    """A process to simulate.

    ``activities`` maps a task name to ``(median task minutes, median wait hours before it)``.
    ``variants`` are ``(weight, steps)``; a step written ``"+Name"`` runs in parallel with the step
    before it (it starts shortly after that step starts), which is where concurrency comes from.
    ``case_dimensions`` are drawn once per case with Zipf-like weights; ``resources`` is a task-level
    dimension; ``metrics`` are ``(log-normal median, sigma)`` per case.

    ``end_activities`` is the project's END CASE business rule: a case is completed when its last task
    is one of them (``None``: no rule set). ``labels`` and ``units`` are the user's column names and the
    metric units of the column mapping (default: the key in title case, no unit). Variants that stop
    before an end activity are cases still in progress.
    """

    key: str
    name: str
    description: str
    case_prefix: str
    activities: dict[str, tuple[float, float]]
    variants: tuple[tuple[float, tuple[str, ...]], ...]
    case_dimensions: dict[str, tuple[str, ...]]
    resources: tuple[str, ...]
    metrics: dict[str, tuple[float, float]]
    end_activities: tuple[str, ...] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)


_PR, _APR, _PO, _APO = (
    "Create Purchase Requisition",
    "Approve Purchase Requisition",
    "Create Purchase Order",
    "Approve Purchase Order",
)
_CPO, _SPO, _GR, _INV = "Change Purchase Order", "Send Purchase Order", "Receive Goods", "Receive Invoice"
_VER, _PAY, _BLK, _RES = "Verify Invoice", "Pay Invoice", "Block Invoice", "Resolve Price Difference"

P2P = ProcessTemplate(
    key="p2p",
    name="Purchase to Pay",
    description="Procurement: requisition, purchase order, goods receipt, invoice and payment.",
    case_prefix="PO",
    activities={
        _PR: (15, 0.0),
        "Change Purchase Requisition": (10, 6.0),
        _APR: (5, 8.0),
        _PO: (20, 12.0),
        _APO: (5, 6.0),
        _CPO: (12, 10.0),
        _SPO: (3, 2.0),
        _GR: (25, 96.0),
        _INV: (8, 24.0),
        _VER: (15, 16.0),
        _BLK: (5, 4.0),
        _RES: (45, 30.0),
        _PAY: (5, 120.0),
        "Cancel Purchase Order": (5, 24.0),
    },
    variants=(
        (0.33, (_PR, _APR, _PO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.18, (_PO, _APO, _SPO, _GR, "+" + _INV, _VER, _PAY)),
        (0.12, (_PR, _APR, _PO, _APO, _CPO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.04, (_PR, _APR, _PO, _APO, _CPO, _APO, _CPO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.10, (_PR, _APR, _PO, _APO, _SPO, _GR, _INV, _VER, _BLK, _RES, _VER, _PAY)),
        (0.08, (_PR, _APR, _PO, _APO, _SPO, _GR, _GR, "+" + _INV, _VER, _PAY)),
        (0.06, (_PR, "Change Purchase Requisition", _APR, _PO, _APO, _SPO, _GR, _INV, _VER, _PAY)),
        (0.05, (_PR, _APR, _PO, "Cancel Purchase Order")),
        (0.04, (_PO, _APO, _SPO, _INV, "+" + _GR, _VER, _BLK, _RES, _VER, _PAY)),
    ),
    case_dimensions={
        "supplier": (
            "Acme Industrial",
            "Globex Supplies",
            "Initech Parts",
            "Umbrella Chemicals",
            "Stark Components",
            "Wayne Logistics",
            "Hooli Hardware",
            "Vandelay Imports",
            "Soylent Foods",
            "Tyrell Electronics",
        ),
        "company_code": ("FR01", "DE01", "US01", "UK01", "ES01"),
        "purchasing_group": ("Direct materials", "Indirect materials", "Services", "IT", "Facilities"),
    },
    resources=(
        "alice",
        "bruno",
        "chen",
        "dora",
        "emil",
        "fatima",
        "goran",
        "hana",
        "ivan",
        "julia",
        "kofi",
        "lea",
    ),
    metrics={"order_amount": (2400.0, 1.1), "quantity": (40.0, 0.9)},
    end_activities=(_PAY, "Cancel Purchase Order"),
    units={"order_amount": "EUR", "quantity": "pcs"},
)

_RO, _CC, _CO, _PK = "Receive Order", "Check Credit", "Confirm Order", "Pick Goods"
_PA, _SH, _CI, _SI = "Pack Goods", "Ship Goods", "Create Invoice", "Send Invoice"
_RP, _REM, _CHO = "Receive Payment", "Send Reminder", "Change Order"

O2C = ProcessTemplate(
    key="o2c",
    name="Order to Cash",
    description="Sales: order entry, credit check, fulfilment, invoicing and cash collection.",
    case_prefix="SO",
    activities={
        _RO: (10, 0.0),
        _CC: (8, 3.0),
        _CO: (4, 4.0),
        _CHO: (10, 12.0),
        _PK: (30, 20.0),
        _PA: (20, 2.0),
        _SH: (15, 6.0),
        _CI: (6, 1.0),
        _SI: (2, 2.0),
        _REM: (3, 400.0),
        _RP: (2, 500.0),
        "Cancel Order": (5, 24.0),
        "Return Goods": (30, 120.0),
    },
    variants=(
        (0.36, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _RP)),
        (0.16, (_RO, _CC, _CO, _PK, _PA, _SH, "+" + _CI, _SI, _RP)),
        (0.11, (_RO, _CC, _CO, _CHO, _CO, _PK, _PA, _SH, _CI, _SI, _RP)),
        (0.10, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _REM, _RP)),
        (0.05, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _REM, _REM, _RP)),
        (0.07, (_RO, _CO, _PK, "+" + _CI, _PA, _SH, _SI, _RP)),
        (0.05, (_RO, _CC, "Cancel Order")),
        (0.04, (_RO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, "Return Goods")),
        (0.06, (_RO, _CC, _CHO, _CC, _CO, _PK, _PA, _SH, _CI, _SI, _RP)),
    ),
    case_dimensions={
        "customer": (
            "Northwind",
            "Contoso",
            "Fabrikam",
            "Adventure Works",
            "Tailspin Toys",
            "Litware",
            "Proseware",
            "Woodgrove Bank",
            "Alpine Ski House",
            "Blue Yonder Airlines",
            "Coho Winery",
            "Lucerne Publishing",
        ),
        "region": ("EMEA", "NA", "APAC", "LATAM"),
        "sales_channel": ("Web shop", "Sales rep", "EDI", "Phone"),
    },
    resources=("amir", "beth", "carlos", "dana", "eli", "freya", "gus", "hiro", "ines", "jon"),
    metrics={"order_value": (850.0, 1.0), "items": (6.0, 0.7)},
    # A case that ends with returned goods still waits for its credit note: not completed.
    end_activities=(_RP, "Cancel Order"),
    units={"order_value": "EUR", "items": "pcs"},
)

_REG, _PICK, _SORT_O, _HAUL = "Register Shipment", "Pick Up Parcel", "Sort at Origin Hub", "Line Haul"
_CUST, _SORT_D, _OUT = "Customs Clearance", "Sort at Destination Hub", "Out for Delivery"
_FAIL, _DEL, _HOLD = "Delivery Attempt Failed", "Deliver Parcel", "Hold at Pickup Point"
_COLLECT, _RTS = "Collect at Pickup Point", "Return to Sender"
_TRUNK = (_REG, _PICK, _SORT_O, _HAUL)

DELIVERY = ProcessTemplate(
    key="delivery",
    name="Parcel Delivery",
    description="Logistics: shipment registration, hub sorting, line haul, customs and last-mile delivery.",
    case_prefix="PCL",
    activities={
        _REG: (5, 0.0),
        _PICK: (15, 6.0),
        _SORT_O: (20, 4.0),
        _HAUL: (240, 2.0),
        _CUST: (60, 12.0),
        _SORT_D: (20, 3.0),
        _OUT: (180, 10.0),
        _FAIL: (5, 0.5),
        _DEL: (5, 0.5),
        _HOLD: (10, 2.0),
        _COLLECT: (5, 30.0),
        _RTS: (120, 48.0),
    },
    variants=(
        (0.38, (*_TRUNK, _SORT_D, _OUT, _DEL)),
        (0.10, (*_TRUNK, _CUST, _SORT_D, _OUT, _DEL)),
        (0.08, (*_TRUNK, "+" + _CUST, _SORT_D, _OUT, _DEL)),
        (0.10, (*_TRUNK, _SORT_D, _OUT, _FAIL, _OUT, _DEL)),
        (0.06, (*_TRUNK, _SORT_D, _OUT, _FAIL, _HOLD, _COLLECT)),
        (0.04, (*_TRUNK, _SORT_D, _OUT, _FAIL, _OUT, _FAIL, _RTS)),
        # Still in progress when the data was extracted: no end activity yet.
        (0.08, _TRUNK),
        (0.06, (*_TRUNK, _SORT_D, _OUT)),
        (0.05, (*_TRUNK, _CUST)),
        (0.05, (*_TRUNK, _SORT_D, _OUT, _FAIL, _HOLD)),
    ),
    # Column order of the source file: carrier, origin hub, service level at 4-6, destination at 7.
    case_dimensions={
        "carrier": ("SwiftPost", "EuroFreight", "ParcelNet", "BlueLine Express"),
        "origin_hub": ("Lille Hub", "Frankfurt Hub", "Barcelona Hub", "Rotterdam Hub"),
        "service_level": ("Standard", "Express", "Economy"),
        "destination": (
            "Paris",
            "Berlin",
            "Madrid",
            "Milan",
            "Amsterdam",
            "Brussels",
            "Lyon",
            "Lisbon",
            "Vienna",
            "Warsaw",
            "Zurich",
            "Dublin",
        ),
    },
    resources=("anna", "bilal", "carla", "dmitri", "eva", "farid", "greta", "hugo", "iris", "jonas"),
    metrics={"weight_kg": (2.5, 0.8), "declared_value": (120.0, 1.0)},
    end_activities=(_DEL, _COLLECT, _RTS),
    labels={"resource": "Courier", "weight_kg": "Weight (kg)", "declared_value": "Declared Value"},
    units={"weight_kg": "kg", "declared_value": "EUR"},
)

TEMPLATES: dict[str, ProcessTemplate] = {t.key: t for t in (P2P, O2C, DELIVERY)}
