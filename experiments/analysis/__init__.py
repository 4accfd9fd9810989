"""Tables and figures drawn from saved results; never imported by jaxrank."""
