"""Facts from the SD specifications, declared once as data.

Used by the model, the drivers and the divergence reports alike.
"""
