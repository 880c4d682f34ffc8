"""Optical imaging and scene display layers: OTF/MTF, Strehl, encircled energy, off-axis PSF maps,
extended sources as radiance maps, and linear retinal images of night scenes with one fixed display
mapping.
"""
