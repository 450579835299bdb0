"""The exercises as an IMS QTI 2.1 package, the format Moodle (its "IMS QTI 2.1" question import) and Canvas (Import
Course Content: "QTI .zip file") read: a zip with an IMS Content Packaging manifest (imsmanifest.xml) and one
assessmentItem per exercise (items/exercise-N.xml).

A choice exercise is a choiceInteraction (one answer, its correctResponse the model's answer, scored by QTI's
match_correct template); a typed number is a textEntryInteraction with a float response, right within the exercise's
tolerance (QTI's <equal toleranceMode="absolute">). Every answer is the exercise's, computed from the model
(lesson/exercises.py): a package of one model or sentence is wrong for another. Built with the standard library's
ElementTree, so every text is escaped as XML.
"""

import io
import zipfile
import xml.etree.ElementTree as ET

from model.i18n import _

QTI = "http://www.imsglobal.org/xsd/imsqti_v2p1"
CP = "http://www.imsglobal.org/xsd/imscp_v1p1"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
QTI_XSD = "http://www.imsglobal.org/xsd/qti/qtiv2p1/imsqti_v2p1.xsd"
CP_XSD = "http://www.imsglobal.org/xsd/imscp_v1p1.xsd"
MATCH_CORRECT = "http://www.imsglobal.org/question/qti_v2p1/rptemplates/match_correct"
ITEM_TYPE = "imsqti_item_xmlv2p1"


def item_id(ex) -> str:
    return f"exercise-{ex.number}"


def item_xml(ex) -> bytes:
    """One exercise as a QTI 2.1 assessmentItem."""
    ET.register_namespace("", QTI)
    q = f"{{{QTI}}}"
    item = ET.Element(q + "assessmentItem", {
        "identifier": item_id(ex),
        "title": _("Exercise {n}: {title}").format(n=ex.number, title=ex.title or _(ex.topic)),
        "adaptive": "false",
        "timeDependent": "false", f"{{{XSI}}}schemaLocation": f"{QTI} {QTI_XSD}"})
    choice = bool(ex.options)
    response = ET.SubElement(item, q + "responseDeclaration", {
        "identifier": "RESPONSE", "cardinality": "single", "baseType": "identifier" if choice else "float"})
    correct = ET.SubElement(response, q + "correctResponse")
    ET.SubElement(correct, q + "value").text = f"choice-{ex.options.index(ex.answer)}" if choice else ex.answer
    outcome = ET.SubElement(item, q + "outcomeDeclaration", {"identifier": "SCORE", "cardinality": "single",
                                                              "baseType": "float"})
    ET.SubElement(ET.SubElement(outcome, q + "defaultValue"), q + "value").text = "0"
    body = ET.SubElement(item, q + "itemBody")
    if choice:
        interaction = ET.SubElement(body, q + "choiceInteraction", {"responseIdentifier": "RESPONSE",
                                                                   "shuffle": "false", "maxChoices": "1"})
        ET.SubElement(interaction, q + "prompt").text = ex.question
        for i, option in enumerate(ex.options):
            ET.SubElement(interaction, q + "simpleChoice", {"identifier": f"choice-{i}"}).text = option
        ET.SubElement(item, q + "responseProcessing", {"template": MATCH_CORRECT})
    else:
        ET.SubElement(body, q + "p").text = ex.question
        para = ET.SubElement(body, q + "p")
        ET.SubElement(para, q + "textEntryInteraction", {"responseIdentifier": "RESPONSE", "expectedLength": "12"})
        processing = ET.SubElement(item, q + "responseProcessing")
        condition = ET.SubElement(ET.SubElement(processing, q + "responseCondition"), q + "responseIf")
        equal = ET.SubElement(condition, q + "equal", {"toleranceMode": "absolute",
                                                       "tolerance": f"{ex.tolerance:g} {ex.tolerance:g}"})
        ET.SubElement(equal, q + "variable", {"identifier": "RESPONSE"})
        ET.SubElement(equal, q + "correct", {"identifier": "RESPONSE"})
        score = ET.SubElement(condition, q + "setOutcomeValue", {"identifier": "SCORE"})
        ET.SubElement(score, q + "baseValue", {"baseType": "float"}).text = "1"
    ET.indent(item)
    return ET.tostring(item, encoding="utf-8", xml_declaration=True)


def manifest_xml(exs) -> bytes:
    """The IMS Content Packaging manifest: one resource per item, each naming its file."""
    ET.register_namespace("", CP)
    c = f"{{{CP}}}"
    manifest = ET.Element(c + "manifest", {"identifier": "transformer-explorer-exercises",
                                           f"{{{XSI}}}schemaLocation": f"{CP} {CP_XSD} {QTI} {QTI_XSD}"})
    metadata = ET.SubElement(manifest, c + "metadata")
    ET.SubElement(metadata, c + "schema").text = "IMS Content"
    ET.SubElement(metadata, c + "schemaversion").text = "1.1"
    ET.SubElement(manifest, c + "organizations")
    resources = ET.SubElement(manifest, c + "resources")
    for ex in exs:
        href = f"items/{item_id(ex)}.xml"
        resource = ET.SubElement(resources, c + "resource", {"identifier": item_id(ex), "type": ITEM_TYPE,
                                                            "href": href})
        ET.SubElement(resource, c + "file", {"href": href})
    ET.indent(manifest)
    return ET.tostring(manifest, encoding="utf-8", xml_declaration=True)


def qti_package(exs) -> bytes:
    """The zip: imsmanifest.xml and items/exercise-N.xml, one per exercise."""
    if not exs:
        raise ValueError("a QTI package needs at least one exercise")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("imsmanifest.xml", manifest_xml(exs))
        for ex in exs:
            z.writestr(f"items/{item_id(ex)}.xml", item_xml(ex))
    return out.getvalue()
